#!/usr/bin/env python3
"""Times the same GEMMs, fc layers, convs and pools through the GPU machine's own framework (PyTorch), for
the record next to tessera_gpu_ref's: same shapes and dtypes, CUDA events, warm-up, batches of ~2 ms, median, inputs rotated over
copies spanning 3x the L2. Writes torch.json in --out.

usage: gpu_torch_reference.py --out DIR --op kind=gemm,name=...,m=..,n=..,k=..,dtype=..[,...] [--op ...]
       gpu_torch_reference.py --compare-only DIR    (recomputes torch.json's like-for-like table from the
                                                     records in DIR; no GPU needed)
       gpu_torch_reference.py --ab-summary DIR OP [OP ...]  (DIR/ab/OP/<round>/ -> DIR/ab.json: the A/B rounds
                                                     of scripts/gpu-reference.sh, per runner output class the
                                                     median, lowest and highest ratio; no GPU needed)
Runs where PyTorch is (the GPU machine); inputs are random (timing only: the numerics record is the runner's).
"""
import argparse
import json
import math
import sys

def torch_dtype(name):
    import torch
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "int8": torch.int8}[name]


def time_us(launch, copies):
    import torch

    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(5):
        launch(i % copies)
    start.record()
    launch(0)
    stop.record()
    torch.cuda.synchronize()
    per_batch = max(1, min(2000, math.ceil(2.0 / max(start.elapsed_time(stop), 1e-4))))
    samples, rotation = [], 0
    for _ in range(21):
        start.record()
        for _ in range(per_batch):
            launch(rotation % copies)
            rotation += 1
        stop.record()
        torch.cuda.synchronize()
        samples.append(1000.0 * start.elapsed_time(stop) / per_batch)
    samples.sort()
    return samples[len(samples) // 2], samples[0], per_batch


def gemm_paths(op, l2_bytes):
    import torch

    m, n, k, dtype = int(op["m"]), int(op["n"]), int(op["k"]), op["dtype"]
    element = torch.tensor([], dtype=torch_dtype(dtype)).element_size()
    set_bytes = (m * k + k * n) * element + m * n * 4
    copies = max(1, min(64, math.ceil(3 * l2_bytes / set_bytes)))
    if dtype == "int8":
        a = [torch.randint(-128, 128, (m, k), dtype=torch.int8, device="cuda") for _ in range(copies)]
        w = [torch.randint(-128, 128, (k, n), dtype=torch.int8, device="cuda") for _ in range(copies)]
        candidates = [("torch._int_mm", lambda i: torch._int_mm(a[i], w[i]))]
    else:
        # Uniform in [-1, 1) like tessera's generator: matrix throughput on this chip depends on the data (power).
        a = [(torch.rand(m, k, device="cuda") * 2 - 1).to(torch_dtype(dtype)) for _ in range(copies)]
        w = [(torch.rand(k, n, device="cuda") * 2 - 1).to(torch_dtype(dtype)) for _ in range(copies)]
        candidates = [(f"torch.matmul-{dtype}", lambda i: torch.matmul(a[i], w[i]))]
    paths = []
    for name, launch in candidates:
        for tf32 in ([False, True] if dtype == "fp32" else [None]):
            label = name if tf32 is None else name + ("-tf32" if tf32 else "-fp32")
            if tf32 is not None:
                torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                median, minimum, per_batch = time_us(launch, copies)
            except RuntimeError as error:  # e.g. _int_mm's shape rules
                paths.append({"path": label, "ran": False, "note": str(error).splitlines()[0]})
                continue
            flops = 2.0 * m * n * k
            paths.append({"path": label, "ran": True, "time_us": median, "time_us_min": minimum,
                          "launches_per_batch": per_batch, "tflops": flops / (median * 1e6)})
    torch.backends.cuda.matmul.allow_tf32 = False
    return paths


def conv_paths(op, l2_bytes):
    """torch.nn.functional.conv2d (cuDNN, benchmark mode: the framework picks its fastest algorithm) on
    channels-last tensors, tessera's NHWC layout."""
    import torch
    get = lambda key, default=None: int(op.get(key, default))
    n, c, h, w, k, r, s = (get(key) for key in ("n", "c", "h", "w", "k", "r", "s"))
    stride, pad, dilation, groups = get("stride", 1), get("pad", 0), get("dilation", 1), get("groups", 1)
    dtype = op["dtype"]
    if dtype == "int8":
        return [{"path": "torch.conv2d-int8", "ran": False, "note": "PyTorch has no int8 conv2d on CUDA"}]
    element = torch.tensor([], dtype=torch_dtype(dtype)).element_size()
    p = (h + 2 * pad - dilation * (r - 1) - 1) // stride + 1
    q = (w + 2 * pad - dilation * (s - 1) - 1) // stride + 1
    set_bytes = (n * c * h * w + k * (c // groups) * r * s + n * k * p * q) * element
    copies = max(1, min(64, math.ceil(3 * l2_bytes / set_bytes)))
    cl = torch.channels_last
    x = [(torch.rand(n, c, h, w, device="cuda") * 2 - 1).to(torch_dtype(dtype)).to(memory_format=cl)
         for _ in range(copies)]
    wt = [(torch.rand(k, c // groups, r, s, device="cuda") * 2 - 1).to(torch_dtype(dtype)).to(memory_format=cl)
          for _ in range(copies)]
    torch.backends.cudnn.benchmark = True
    conv = torch.nn.functional.conv2d
    launch = lambda i: conv(x[i], wt[i], stride=stride, padding=pad, dilation=dilation, groups=groups)
    paths = []
    for tf32 in ([False, True] if dtype == "fp32" else [None]):
        label = f"torch.conv2d-{dtype}" + ("" if tf32 is None else ("-tf32" if tf32 else "-fp32"))
        if tf32 is not None:
            torch.backends.cudnn.allow_tf32 = tf32
        median, minimum, per_batch = time_us(launch, copies)
        flops = 2.0 * n * p * q * k * (c // groups) * r * s
        paths.append({"path": label, "ran": True, "time_us": median, "time_us_min": minimum,
                      "launches_per_batch": per_batch, "tflops": flops / (median * 1e6)})
    torch.backends.cudnn.allow_tf32 = True
    return paths


def pool_paths(op, l2_bytes):
    """torch.nn.functional.max_pool2d / avg_pool2d on channels-last tensors (tessera's NHWC), with tessera's
    semantics: padding takes no part in a max, and an average divides by the whole window
    (count_include_pad=True)."""
    import torch
    get = lambda key, default=None: int(op.get(key, default))
    n, c, h, w, r, s = (get(key) for key in ("n", "c", "h", "w", "r", "s"))
    stride, pad, mode, dtype = get("stride", 1), get("pad", 0), op["mode"], op["dtype"]
    label = f"torch.{mode}_pool2d-{dtype}"
    if dtype == "int8":
        return [{"path": label, "ran": False, "note": "PyTorch has no int8 pooling on CUDA"}]
    element = torch.tensor([], dtype=torch_dtype(dtype)).element_size()
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    set_bytes = (n * c * h * w + n * c * p * q) * element
    copies = max(1, min(64, math.ceil(3 * l2_bytes / set_bytes)))
    x = [(torch.rand(n, c, h, w, device="cuda") * 2 - 1).to(torch_dtype(dtype)).to(memory_format=torch.channels_last)
         for _ in range(copies)]
    F = torch.nn.functional
    if mode == "max":
        launch = lambda i: F.max_pool2d(x[i], (r, s), stride=stride, padding=pad)
    else:
        launch = lambda i: F.avg_pool2d(x[i], (r, s), stride=stride, padding=pad, count_include_pad=True)
    median, minimum, per_batch = time_us(launch, copies)
    reads = n * p * q * c * r * s  # window elements read, as the runner counts a pool's rate
    return [{"path": label, "ran": True, "time_us": median, "time_us_min": minimum, "launches_per_batch": per_batch,
             "tflops": reads / (median * 1e6)}]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out")
    parser.add_argument("--op", action="append", default=[])
    parser.add_argument("--compare-only")
    parser.add_argument("--ab-summary", nargs="+", metavar=("DIR", "OP"))
    args = parser.parse_args()
    if args.ab_summary:
        return ab_summary(args.ab_summary[0], args.ab_summary[1:])
    if args.compare_only:
        path = f"{args.compare_only}/torch.json"
        with open(path) as f:
            recorded = json.load(f)
        recorded["comparison"] = compare(args.compare_only, recorded["ops"])
        with open(path, "w") as f:
            json.dump(recorded, f, indent=1)
        return 0
    if not args.out:
        parser.error("--out is required")
    import torch
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    records = []
    for text in args.op:
        op = dict(pair.split("=", 1) for pair in text.split(","))
        record = {"op": op}
        if op["kind"] == "gemm":
            record["paths"] = gemm_paths(op, l2_bytes)
        elif op["kind"] == "fc":
            record["paths"] = gemm_paths({**op, "m": op["batch"], "n": op["outputs"], "k": op["inputs"]}, l2_bytes)
        elif op["kind"] == "conv2d":
            record["paths"] = conv_paths(op, l2_bytes)
        elif op["kind"] == "pool":
            record["paths"] = pool_paths(op, l2_bytes)
        else:
            record["no_framework_path"] = f"no PyTorch comparison for kind {op['kind']} yet"
        records.append(record)
        print(f"torch: {op['name']}: {record.get('paths')}", file=sys.stderr)
    with open(f"{args.out}/torch.json", "w") as f:
        json.dump({"framework": f"torch {torch.__version__}", "gpu": torch.cuda.get_device_name(0),
                   "ops": records, "comparison": compare(args.out, records)}, f, indent=1)


# Like for like: runner paths by the output they store (the name after the library), and the framework's path
# that stores the same.
LIKE_CONV = {"fp32": "torch.conv2d-fp32-fp32", "tf32": "torch.conv2d-fp32-tf32", "bf16-bf16out": "torch.conv2d-bf16",
             "fp16-fp16out": "torch.conv2d-fp16"}
LIKE = {"fp32": "torch.matmul-fp32-fp32", "tf32": "torch.matmul-fp32-tf32", "bf16-bf16out": "torch.matmul-bf16",
        "fp16-fp16out": "torch.matmul-fp16", "int8-int32": "torch._int_mm", "int8-tiled": "torch._int_mm"}


def like_pool(mode):
    return {"fp32": f"torch.{mode}_pool2d-fp32", "bf16-bf16out": f"torch.{mode}_pool2d-bf16",
            "fp16-fp16out": f"torch.{mode}_pool2d-fp16"}


def compare(out, records):
    """Per op and output class: the runner's fastest path, the framework's, the ratio, and which is faster."""
    table = []
    for record in records:
        name = record["op"]["name"]
        try:
            with open(f"{out}/{name}.json") as f:
                runner = json.load(f)
        except FileNotFoundError:
            continue
        framework = {p["path"]: p for p in record.get("paths", []) if p.get("ran")}
        fastest = {}
        for path in runner.get("paths", []):
            if not path.get("ran"):
                continue
            # The output class: the name after the library, without a parenthesised remark.
            kind = path["path"].split(" (", 1)[0].split("-", 1)[1]
            if kind not in fastest or path["time_us"] < fastest[kind]["time_us"]:
                fastest[kind] = path
        kind_of_op = record["op"]["kind"]
        like = LIKE_CONV if kind_of_op == "conv2d" else like_pool(record["op"]["mode"]) if kind_of_op == "pool" else LIKE
        for kind, path in sorted(fastest.items()):
            other = framework.get(like.get(kind, ""))
            if other is None:
                continue
            ratio = path["time_us"] / other["time_us"]
            table.append({"op": name, "runner_path": path["path"], "runner_us": path["time_us"],
                          "framework_path": other["path"], "framework_us": other["time_us"],
                          "runner_over_framework": ratio, "faster": "runner" if ratio < 1 else "framework"})
    return table


def ab_summary(directory, names):
    """The A/B rounds of each op (runner and PyTorch timed alone, by turns): every round's like-for-like rows
    and, per runner output class, the ratios' median, lowest and highest over the rounds."""
    import glob
    import os
    import statistics
    summary = {"protocol": "each op timed alone in rounds; in odd rounds the runner (tessera_gpu_ref "
                           "--skip-ceilings) goes first, in even rounds PyTorch; each side's time per round is "
                           "its usual median of 21 batches; the ratio per round is runner/PyTorch of that round",
               "ops": {}}
    for name in names:
        rounds = []
        for round_dir in sorted(glob.glob(os.path.join(directory, "ab", name, "*")), key=lambda d: int(os.path.basename(d))):
            number = int(os.path.basename(round_dir))
            torch_file = os.path.join(round_dir, "torch.json")
            if not os.path.exists(torch_file):
                rounds.append({"round": number, "failed": True})
                continue
            rows = [row for row in json.load(open(torch_file))["comparison"] if row["op"] == name]
            framework = {p["path"]: p["time_us"] for op in json.load(open(torch_file))["ops"]
                         if op["op"]["name"] == name for p in op.get("paths", []) if p.get("ran")}
            runner = {p["path"]: p["time_us"] for p in json.load(open(os.path.join(round_dir, name + ".json")))["paths"]
                      if p.get("ran")}
            rounds.append({"round": number, "first": "runner" if number % 2 else "torch", "rows": rows,
                           "runner_paths_us": runner, "framework_paths_us": framework})
        classes = {}
        for entry in rounds:
            for row in entry.get("rows", []):
                kind = row["runner_path"].split(" (", 1)[0].split("-", 1)[1]
                classes.setdefault(kind, []).append(row)
        by_class = {}
        for kind, rows in sorted(classes.items()):
            ratios = [row["runner_over_framework"] for row in rows]
            by_class[kind] = {"rounds": len(rows), "ratios": ratios, "median_ratio": statistics.median(ratios),
                              "min_ratio": min(ratios), "max_ratio": max(ratios),
                              "runner_paths": sorted({row["runner_path"] for row in rows}),
                              "median_runner_us": statistics.median(row["runner_us"] for row in rows),
                              "runner_us": [row["runner_us"] for row in rows],
                              "median_framework_us": statistics.median(row["framework_us"] for row in rows),
                              "framework_us": [row["framework_us"] for row in rows],
                              "framework_path": rows[0]["framework_path"]}
        # Every runner path of a like-for-like class against the framework's path of that class, round by round.
        by_path = {}
        for entry in rounds:
            for path, runner_us in entry.get("runner_paths_us", {}).items():
                kind = path.split(" (", 1)[0].split("-", 1)[1]
                other = entry["framework_paths_us"].get(LIKE_CONV.get(kind, ""))
                if other:
                    by_path.setdefault(path, []).append(runner_us / other)
        by_path = {path: {"ratios": ratios, "median_ratio": statistics.median(ratios), "min_ratio": min(ratios),
                          "max_ratio": max(ratios)} for path, ratios in sorted(by_path.items())}
        summary["ops"][name] = {"rounds": rounds, "by_output_class": by_class, "by_path": by_path}
    with open(os.path.join(directory, "ab.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
