#!/usr/bin/python3
"""Summarises recorded GPU references as a Markdown table: per op, the reported path and its time, the
framework's like-for-like time, which is faster, the roofline floor, and the self-check.

usage: scripts/reference_summary.py traces/reference/nvidia-h200
"""
import glob
import json
import os
import sys


def shape(op):
    if op["kind"] == "conv2d":
        text = f'{op["n"]}x{op["h"]}x{op["w"]}x{op["c"]} k{op["k"]} {op["r"]}x{op["s"]}/{op["stride"]} p{op["pad"]}'
        return text + (f' g{op["groups"]}' if op["groups"] > 1 else "") + (f' d{op["dilation"]}' if op["dilation"] > 1 else "")
    return f'{op["m"]}x{op["n"]}x{op["k"]}'


def main():
    root = sys.argv[1]
    print("| workload | op | shape | dtype | reported path | time_us | TFLOP/s | floor_us | like-for-like | runner/framework | faster | self-check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for directory in sorted(glob.glob(os.path.join(root, "*"))):
        torch_file = os.path.join(directory, "torch.json")
        comparison = json.load(open(torch_file))["comparison"] if os.path.exists(torch_file) else []
        for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
            if os.path.basename(path) in ("run.json", "torch.json"):
                continue
            record = json.load(open(path))
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
