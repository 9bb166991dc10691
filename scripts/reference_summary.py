#!/usr/bin/python3
"""Summarises recorded GPU references as Markdown tables: per op, the reported path and its time, the
framework's like-for-like time, which is faster, the roofline floor, and the self-check; with --networks, per
workload that has convs, the sums of per-layer times and how many layers are within 10% of the framework.

usage: scripts/reference_summary.py traces/reference/nvidia-h200 [WORKLOAD ...]
       scripts/reference_summary.py --networks traces/reference/nvidia-h200
"""
import glob
import json
import os
import sys


def shape(op):
    if op["kind"] == "pool":
        return f'{op["mode"]} {op["r"]}x{op["s"]}/{op["stride"]} p{op["pad"]} on {op["n"]}x{op["h"]}x{op["w"]}x{op["c"]}'
    if op["kind"] == "conv2d":
        text = f'{op["n"]}x{op["h"]}x{op["w"]}x{op["c"]} k{op["k"]} {op["r"]}x{op["s"]}/{op["stride"]} p{op["pad"]}'
        return text + (f' g{op["groups"]}' if op["groups"] > 1 else "") + (f' d{op["dilation"]}' if op["dilation"] > 1 else "")
    return f'{op["m"]}x{op["n"]}x{op["k"]}'


def load(directory):
    """The op records of one workload folder and its like-for-like comparison rows."""
    torch_file = os.path.join(directory, "torch.json")
    comparison = json.load(open(torch_file))["comparison"] if os.path.exists(torch_file) else []
    records = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        if os.path.basename(path) not in ("run.json", "torch.json", "ab.json"):
            records.append(json.load(open(path)))
    return records, comparison


def load_ab(directory):
    """The A/B rounds of the workload's ops near the line (scripts/gpu-reference.sh, TESSERA_AB_OPS), by op."""
    ab_file = os.path.join(directory, "ab.json")
    return json.load(open(ab_file))["ops"] if os.path.exists(ab_file) else {}


def networks(root):
    """Per network: sums of per-layer medians (reported path, fastest path, framework) and the layers within
    10% of the framework or faster, by kind; then every layer more than 10% slower than the framework. A
    layer with A/B rounds (ab.json) is judged by its rounds' median ratio, not the single timing of the run."""
    print("| network | layers | runner, reported path (µs) | runner, fastest path (µs) | PyTorch (µs) | "
          "runner/PyTorch (sums, fastest) | convs within 10% or faster | pools within 10% or faster |")
    print("|---|---|---|---|---|---|---|---|")
    slower, repeated = [], []
    for directory in sorted(glob.glob(os.path.join(root, "*"))):
        records, comparison = load(directory)
        ab = load_ab(directory)
        if not any(r["op"]["kind"] == "conv2d" for r in records):
            continue
        name = os.path.basename(directory)
        measured = [r for r in records if "no_gpu_path" not in r]
        reported = sum(r["time_us"] for r in measured)
        fastest = sum(min(p["time_us"] for p in r["paths"] if p.get("ran")) for r in measured)
        framework, within = 0.0, {"conv2d": [0, 0], "pool": [0, 0]}
        for r in measured:
            rows = [c for c in comparison if c["op"] == r["op"]["name"]]
            if not rows:
                continue
            best = min(rows, key=lambda c: c["runner_over_framework"])
            framework += best["framework_us"]
            ratio = best["runner_over_framework"]
            rounds = ab.get(r["op"]["name"], {}).get("by_output_class", {})
            if rounds:
                kind_ab, best_ab = min(rounds.items(), key=lambda item: item[1]["median_ratio"])
                ratio = best_ab["median_ratio"]
                repeated.append((name, r["op"]["name"], shape(r["op"]), kind_ab, best_ab))
            kind = r["op"]["kind"]
            if kind in within:
                within[kind][1] += 1
                within[kind][0] += ratio <= 1.10
            if ratio > 1.10:
                slower.append((name, r["op"]["name"], shape(r["op"]), best))
        counts = {k: f"{v[0]} of {v[1]}" if v[1] else "-" for k, v in within.items()}
        print(f"| {name} | {len(measured)} | {reported:.0f} | {fastest:.0f} | {framework:.0f} | "
              f"{fastest / framework:.2f} | {counts['conv2d']} | {counts['pool']} |")
    print()
    print("| network | layer | shape | runner's fastest like-for-like path | runner_us | framework_us | runner/framework |")
    print("|---|---|---|---|---|---|---|")
    for name, op, text, best in slower:
        print(f'| {name} | {op} | {text} | {best["runner_path"]} | {best["runner_us"]:.1f} | '
              f'{best["framework_us"]:.1f} | {best["runner_over_framework"]:.2f} |')
    if repeated:
        print()
        print("| network | layer | shape | runner output class (paths) | rounds | runner_us median (range) | "
              "framework_us median (range) | runner/framework median (range) |")
        print("|---|---|---|---|---|---|---|---|")
        for name, op, text, kind, best in repeated:
            print(f'| {name} | {op} | {text} | {kind} ({", ".join(best["runner_paths"])}) | {best["rounds"]} | '
                  f'{best["median_runner_us"]:.1f} ({min(best["runner_us"]):.1f}–{max(best["runner_us"]):.1f}) | '
                  f'{best["median_framework_us"]:.1f} ({min(best["framework_us"]):.1f}–{max(best["framework_us"]):.1f}) | '
                  f'{best["median_ratio"]:.2f} ({best["min_ratio"]:.2f}–{best["max_ratio"]:.2f}) |')


def main():
    if sys.argv[1] == "--networks":
        networks(sys.argv[2])
        return
    root, only = sys.argv[1], set(sys.argv[2:])
    print("| workload | op | shape | dtype | reported path | time_us | TFLOP/s | floor_us | like-for-like | runner/framework | faster | self-check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for directory in sorted(glob.glob(os.path.join(root, "*"))):
        if only and os.path.basename(directory) not in only:
            continue
        records, comparison = load(directory)
        for record in records:
            op = record["op"]
            if "no_gpu_path" in record:
                print(f'| {os.path.basename(directory)} | {op["name"]} | {op["kind"]} | - | {record["no_gpu_path"]} '
                      f'| - | - | - | - | - | - | - |')
                continue
            rows = [c for c in comparison if c["op"] == op["name"]]
            like = "; ".join(f'{c["runner_path"]} {c["runner_us"]:.1f} vs {c["framework_path"]} {c["framework_us"]:.1f}'
                             for c in rows) or "none"
            ratio = "; ".join(f'{c["runner_over_framework"]:.2f}' for c in rows) or "-"
            faster = "; ".join(c["faster"] for c in rows) or "-"
            check = record["self_check"]
            print(f'| {os.path.basename(directory)} | {op["name"]} | {shape(op)} | {op["dtype"]} | '
                  f'{record["reported_path"]} | {record["time_us"]:.1f} | {record["tflops"]:.1f} | '
                  f'{record["roofline_floor_us"]:.1f} | {like} | {ratio} | {faster} | '
                  f'{"pass" if check["pass"] else "FAIL"} {check["rel_l2_err"]:.1e} |')


if __name__ == "__main__":
    main()
