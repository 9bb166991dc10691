#!/usr/bin/python3
"""Summarises recorded GPU references (scripts/gpu-reference.sh) as Markdown tables.

usage: scripts/reference_summary.py ROOT [WORKLOAD ...]   per op: device time, eager time, PyTorch's best
                                                          variant, the A/B ratio and its spread, checks, profile
       scripts/reference_summary.py --networks ROOT       per network: sums and layers within 10% (device and
                                                          eager), then every layer more than 10% slower
       scripts/reference_summary.py --gemms ROOT          every gemm/fc op: device ratio per output class
       scripts/reference_summary.py --vector ROOT         every vector-kind op (softmax, norms, elementwise,
                                                          pool, rope): device ratio per output class
       scripts/reference_summary.py --attention ROOT      every attention op: device ratio (the share of
                                                          PyTorch's speed reached is 1 / the ratio)
       scripts/reference_summary.py --moe ROOT            every moe op: the runner's reported path against
                                                          torch._grouped_mm and the per-expert loop (device
                                                          median and replay range, ms), and the A/B row
       scripts/reference_summary.py --epilogues ROOT [KIND ...]  every op (of these kinds) with an epilogue,
                                                          in the output class compared with PyTorch: the
                                                          runner's fused and unfused chains against each other
                                                          and PyTorch's best

ROOT is e.g. traces/reference/nvidia-h200. Device time is the median of CUDA-graph replays (both sides); the
ratio runner/PyTorch is the median of the A/B rounds' ratios, with their lowest and highest; eager time is
launches issued back to back (what a caller of one op at a time sees).
"""
import glob
import json
import os
import sys

WITHIN = 1.10  # "within 10%": runner/PyTorch at most this
PARITY = 1.03  # "at parity": within the A/B rounds' typical spread


VECTOR_KINDS = ("softmax", "layernorm", "rmsnorm", "elementwise", "pool", "rope")


def shape(op):
    epilogue = f' +{op["epilogue"]}' if op.get("epilogue") else ""
    if op["kind"] in ("softmax", "layernorm", "rmsnorm", "elementwise"):
        extra = {"softmax": lambda: (f' scale {op["scale"]}' if "scale" in op else "") +
                 (" causal" if op.get("causal") in (True, "true") else ""),
                 "elementwise": lambda: f' {op["fn"]}'}.get(op["kind"], lambda: "")()
        return f'{op["rows"]}x{op["cols"]}{extra}'
    if op["kind"] == "rope":
        return (f'{op["batch"]}x{op["seq"]} tokens, {op["heads"]} heads of {op["head_dim"]}, {op["style"]}, '
                f'position {op["position"]}, base {op["base"]:g}')
    if op["kind"] == "attention":
        cache = (f' paged {op["kv_cache.block_tokens"]}' if op.get("kv_cache.layout") == "paged" else "") + \
                (" bshd" if op.get("kv_cache.order") == "bshd" else "")
        return (f'b{op["batch"]} h{op["heads"]}/{op["kv_heads"]} q{op["seq_q"]} kv{op["seq_kv"]} d{op["head_dim"]}'
                f'{" causal" if op.get("causal") in (True, "true") else ""}{cache}')
    if op["kind"] == "moe":
        return (f't{op["tokens"]} h{op["hidden"]} f{op["ffn"]} e{op["experts"]} top{op["top_k"]}' +
                (f' shared{op["shared_experts"]}' if op.get("shared_experts") else "") +
                (f' {op["routing.scoring"]} groups {op["routing.topk_groups"]}/{op["routing.groups"]}'
                 if op.get("routing.groups", 1) > 1 else ""))
    if op["kind"] == "pool":
        return f'{op["mode"]} {op["r"]}x{op["s"]}/{op["stride"]} p{op["pad"]} on {op["n"]}x{op["h"]}x{op["w"]}x{op["c"]}'
    if op["kind"] == "conv2d":
        text = f'{op["n"]}x{op["h"]}x{op["w"]}x{op["c"]} k{op["k"]} {op["r"]}x{op["s"]}/{op["stride"]} p{op["pad"]}'
        return (text + (f' g{op["groups"]}' if op["groups"] > 1 else "") +
                (f' d{op["dilation"]}' if op["dilation"] > 1 else "") + epilogue)
    return f'{op["m"]}x{op["n"]}x{op["k"]}{epilogue}'


def load(directory):
    """The op records of one workload folder (in workload order) and PyTorch's file."""
    torch_file = os.path.join(directory, "torch.json")
    framework = json.load(open(torch_file)) if os.path.exists(torch_file) else {"ops": [], "comparison": []}
    records = []
    for path in glob.glob(os.path.join(directory, "*.json")):
        if os.path.basename(path) not in ("run.json", "torch.json"):
            records.append(json.load(open(path)))
    records.sort(key=lambda r: r["op"].get("index", 0))
    return records, framework


def workload_dirs(root, only=()):
    """The workload folders recorded with device time; the others (made before it) are named on stderr."""
    for directory in sorted(glob.glob(os.path.join(root, "*"))):
        if only and os.path.basename(directory) not in only:
            continue
        torch_file = os.path.join(directory, "torch.json")
        if os.path.exists(torch_file) and "protocol" not in json.load(open(torch_file)):
            print(f"reference_summary: {os.path.basename(directory)} predates device-time records; left out",
                  file=sys.stderr)
            continue
        yield directory


def best_row(framework, name):
    """The op's comparison row with the lowest A/B ratio (the output class where the runner does best)."""
    rows = [row for row in framework["comparison"] if row["op"] == name]
    return min(rows, key=lambda row: row["runner_over_framework"]) if rows else None


def checks(record):
    ran = [p for p in record.get("paths", []) if p.get("ran")]
    passed = [p for p in ran if p.get("check", {}).get("pass")]
    return f"{len(passed)}/{len(ran)}"


def profile_text(record):
    reported = next((p for p in record["paths"] if p["path"] == record["reported_path"]), {})
    totals = reported.get("profile", {}).get("totals")
    if not totals:
        return "-"
    megabytes = (totals["dram_bytes_read"] + totals["dram_bytes_written"]) / 1e6
    return f'{megabytes:.2f} MB, tensor {totals["tensor_pipe_pct"]:.0f}%'


def ops_table(root, only):
    print("| workload | op | shape | dtype | reported path | device µs | eager µs | floor µs | runner path vs PyTorch's "
          "best | runner µs | PyTorch µs | runner/PyTorch device, median (range) | eager ratio | paths checked | "
          "reported path's profile |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for directory in workload_dirs(root, only):
        name = os.path.basename(directory)
        records, framework = load(directory)
        for record in records:
            op = record["op"]
            if "no_gpu_path" in record:
                print(f'| {name} | {op["name"]} | {op["kind"]} | - | {record["no_gpu_path"]} |' + " - |" * 10)
                continue
            row = best_row(framework, op["name"])
            versus = (f'{row["runner_path"]} vs {row["framework_path"]} ({row["framework_variant"]})' if row else "none")
            numbers = (f'{row["runner_us"]:.2f} | {row["framework_us"]:.2f} | {row["runner_over_framework"]:.2f} '
                       f'({row["ratio_min"]:.2f}–{row["ratio_max"]:.2f}) | {row["eager_runner_over_framework"]:.2f}'
                       if row else "- | - | - | -")
            floor = record.get("roofline_floor_us")
            floor_text = f"{floor:.2f}" if floor is not None else "-"
            print(f'| {name} | {op["name"]} | {shape(op)} | {op["dtype"]} | {record["reported_path"]} | '
                  f'{record["time_us"]:.2f} | {record["eager_us"]:.2f} | {floor_text} | ', end="")
            print(f'{versus} | {numbers} | {checks(record)} | {profile_text(record)} |')


def networks(root):
    print("| network | layers | runner device µs (reported) | runner device µs (like-for-like) | PyTorch device µs "
          "(best variant) | runner/PyTorch device | convs within 10% | pools within 10% | runner eager µs | "
          "PyTorch eager µs | runner/PyTorch eager |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    slower = []
    for directory in workload_dirs(root):
        records, framework = load(directory)
        if not any(r["op"]["kind"] == "conv2d" for r in records):
            continue
        name = os.path.basename(directory)
        measured = [r for r in records if "no_gpu_path" not in r]
        reported = sum(r["time_us"] for r in measured)
        runner = torch_sum = runner_eager = torch_eager = 0.0
        within = {"conv2d": [0, 0], "pool": [0, 0]}
        for r in measured:
            row = best_row(framework, r["op"]["name"])
            if not row:
                continue
            runner += row["runner_us"]
            torch_sum += row["framework_us"]
            runner_eager += row["runner_eager_us"]
            torch_eager += row["framework_eager_us"]
            kind = r["op"]["kind"]
            if kind in within:
                within[kind][1] += 1
                within[kind][0] += row["runner_over_framework"] <= WITHIN
            if row["runner_over_framework"] > WITHIN:
                slower.append((name, r, row))
        counts = {k: f"{v[0]} of {v[1]}" if v[1] else "-" for k, v in within.items()}
        print(f"| {name} | {len(measured)} | {reported:.0f} | {runner:.0f} | {torch_sum:.0f} | {runner / torch_sum:.2f} | "
              f"{counts['conv2d']} | {counts['pool']} | {runner_eager:.0f} | {torch_eager:.0f} | "
              f"{runner_eager / torch_eager:.2f} |")
    print()
    print("| network | layer | shape | runner path | PyTorch path | runner µs | PyTorch µs | runner/PyTorch (range) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, record, row in slower:
        print(f'| {name} | {record["op"]["name"]} | {shape(record["op"])} | {row["runner_path"]} | '
              f'{row["framework_path"]} | {row["runner_us"]:.2f} | {row["framework_us"]:.2f} | '
              f'{row["runner_over_framework"]:.2f} ({row["ratio_min"]:.2f}–{row["ratio_max"]:.2f}) |')


def gemms(root):
    print("| workload | op | shape | dtype | class | runner path | PyTorch path | runner µs | PyTorch µs | "
          "runner/PyTorch device (range) | at parity (≤ 1.03) or better | eager ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for directory in workload_dirs(root):
        records, framework = load(directory)
        for record in records:
            op = record["op"]
            if op["kind"] not in ("gemm", "fc"):
                continue
            for row in framework["comparison"]:
                if row["op"] != op["name"]:
                    continue
                print(f'| {os.path.basename(directory)} | {op["name"]} | {shape(op)} | {op["dtype"]} | {row["class"]} | '
                      f'{row["runner_path"]} | {row["framework_path"]} | {row["runner_us"]:.2f} | '
                      f'{row["framework_us"]:.2f} | {row["runner_over_framework"]:.2f} ({row["ratio_min"]:.2f}–'
                      f'{row["ratio_max"]:.2f}) | {"yes" if row["runner_over_framework"] <= PARITY else "NO"} | '
                      f'{row["eager_runner_over_framework"]:.2f} |')


def ab_table(root, kinds):
    """Every op of these kinds: the A/B row of each output class."""
    print("| workload | op | kind | shape | dtype | class | runner path | PyTorch path (variant) | runner µs | "
          "PyTorch µs | runner/PyTorch device (range) | within 10% | eager ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for directory in workload_dirs(root):
        records, framework = load(directory)
        for record in records:
            op = record["op"]
            if op["kind"] not in kinds:
                continue
            for row in framework["comparison"]:
                if row["op"] != op["name"]:
                    continue
                print(f'| {os.path.basename(directory)} | {op["name"]} | {op["kind"]} | {shape(op)} | {op["dtype"]} | '
                      f'{row["class"]} | {row["runner_path"]} | {row["framework_path"]} ({row["framework_variant"]}) | '
                      f'{row["runner_us"]:.2f} | {row["framework_us"]:.2f} | {row["runner_over_framework"]:.2f} '
                      f'({row["ratio_min"]:.2f}–{row["ratio_max"]:.2f}) | '
                      f'{"yes" if row["runner_over_framework"] <= WITHIN else "NO"} | '
                      f'{row["eager_runner_over_framework"]:.2f} |')


def output_class(path_name):
    base = path_name.split(" (", 1)[0]
    return base.split("-", 1)[1] if "-" in base else base


def epilogues(root, kinds=()):
    """Per op with an epilogue, in each output class compared with PyTorch: the runner's fastest checked fused
    and unfused paths (device time as recorded), and the A/B row against PyTorch's best variant."""
    print("| workload | op | shape | class | runner fused path | fused µs | runner unfused path | unfused µs | "
          "fused/unfused | PyTorch best (variant) | runner/PyTorch device (range) | within 10% |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for directory in workload_dirs(root):
        records, framework = load(directory)
        for record in records:
            op = record["op"]
            if not op.get("epilogue") or (kinds and op["kind"] not in kinds):
                continue
            best = {}
            for path in record.get("paths", []):
                if not path.get("ran") or not path.get("check", {}).get("pass") or "fusion" not in path:
                    continue
                key = (output_class(path["path"]), path["fusion"])
                if key not in best or path["time_us"] < best[key]["time_us"]:
                    best[key] = path
            for cls in sorted({key[0] for key in best}):
                fused, unfused = best.get((cls, "fused")), best.get((cls, "unfused"))
                row = next((r for r in framework["comparison"] if r["op"] == op["name"] and r["class"] == cls), None)
                if not row:
                    continue
                cell = lambda path: (f'{path["path"]} | {path["time_us"]:.2f}' if path else "- | -")
                versus = (f'{row["framework_path"]} ({row["framework_variant"]}) | {row["runner_over_framework"]:.2f} '
                          f'({row["ratio_min"]:.2f}–{row["ratio_max"]:.2f}) | '
                          f'{"yes" if row["runner_over_framework"] <= WITHIN else "NO"}' if row else "- | - | -")
                ratio = f'{fused["time_us"] / unfused["time_us"]:.2f}' if fused and unfused else "-"
                print(f'| {os.path.basename(directory)} | {op["name"]} | {shape(op)} | {cls} | {cell(fused)} | '
                      f'{cell(unfused)} | {ratio} | {versus} |')


def moe(root):
    """Every moe op: the runner's reported path and PyTorch's two variants, device time (median, replay
    range), and the A/B row against PyTorch's fastest variant."""
    print("| workload | op | shape | runner path | runner ms | torch._grouped_mm ms | per-expert loop ms | "
          "runner/PyTorch A/B (range) | against |")
    print("|---|---|---|---|---|---|---|---|---|")
    ms = lambda p: f'{p["device"]["median_us"] / 1e3:.2f} ({p["device"]["min_us"] / 1e3:.2f}–{p["device"]["max_us"] / 1e3:.2f})'
    for directory in workload_dirs(root):
        records, framework = load(directory)
        for record in records:
            op = record["op"]
            if op["kind"] != "moe":
                continue
            reported = next(p for p in record["paths"] if p["path"] == record["reported_path"])
            variants = {p["path"].split("-")[0]: p for o in framework["ops"] if o["op"]["name"] == op["name"]
                        for p in o.get("paths", []) if p.get("ran")}
            cell = lambda name: ms(variants[name]) if name in variants else "-"
            row = next((r for r in framework["comparison"] if r["op"] == op["name"]), None)
            versus = (f'{row["runner_over_framework"]:.2f} ({row["ratio_min"]:.2f}–{row["ratio_max"]:.2f}) | '
                      f'{row["framework_path"]}' if row else "- | -")
            print(f'| {os.path.basename(directory)} | {op["name"]} | {shape(op)} | {reported["path"]} | '
                  f'{ms(reported)} | {cell("torch.grouped_mm")} | {cell("torch.expert_loop")} | {versus} |')


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--vector":
        return ab_table(sys.argv[2], VECTOR_KINDS)
    if sys.argv[1] == "--attention":
        return ab_table(sys.argv[2], ("attention",))
    if sys.argv[1] == "--moe":
        return moe(sys.argv[2])
    if sys.argv[1] == "--epilogues":
        return epilogues(sys.argv[2], set(sys.argv[3:]))
    if sys.argv[1] == "--networks":
        networks(sys.argv[2])
    elif sys.argv[1] == "--gemms":
        gemms(sys.argv[2])
    else:
        ops_table(sys.argv[1], set(sys.argv[2:]))


if __name__ == "__main__":
    main()
