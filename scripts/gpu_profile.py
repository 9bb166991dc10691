#!/usr/bin/env python3
"""Profiles the paths a workload's GPU records report and compare (each record's `profiled_paths`: the fastest
checked path of every output class) with Nsight Compute, and writes the counters into the records.

usage: gpu_profile.py --runner build-gpu/tessera_gpu_ref --records DIR --op kind=...,name=... [--op ...]

The runner rebuilds each of those paths with the library candidate its record chose (`--pin`), and runs it once
between cudaProfilerStart and cudaProfilerStop; ncu (--profile-from-start off, --clock-control none: the clocks
are left as the machine has them; caches flushed before each kernel) reads per kernel: its device time, DRAM
bytes read and written, SM and memory throughput, tensor-pipe utilisation, achieved occupancy, registers and
launch shape, and the warp stall reasons. Each record's path gets `profile` (its kernels and their totals).
"""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

FIXED = {
    "gpu__time_duration.sum": "duration_ns",
    "dram__bytes_read.sum": "dram_bytes_read",
    "dram__bytes_write.sum": "dram_bytes_written",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__grid_size": "grid_size",
    "launch__block_size": "block_size",
}


def available_metrics(ncu):
    """The chip's metric names (ncu --query-metrics), to pick the tensor-pipe and stall metrics it has."""
    text = subprocess.run([ncu, "--query-metrics", "--chip", "gh100"], capture_output=True, text=True).stdout
    return set(re.findall(r"^(\S+)\s", text, re.M))


def metric_set(ncu):
    names = available_metrics(ncu)
    tensor = sorted(n for n in names if re.fullmatch(r"sm__pipe_tensor\w*_cycles_active", n))
    stalls = sorted(n for n in names if re.fullmatch(r"smsp__average_warps_issue_stalled_\w+_per_issue_active", n))
    metrics = dict(FIXED)
    for name in tensor:
        metrics[name + ".avg.pct_of_peak_sustained_active"] = "tensor:" + name
    for name in stalls:
        reason = name[len("smsp__average_warps_issue_stalled_"):-len("_per_issue_active")]
        metrics[name + ".ratio"] = "stall:" + reason
    return metrics


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


# ncu prints a metric's values in the unit of its column (the CSV's second row); --print-units base asks for
# bytes and nanoseconds, and the scale below converts whatever unit a column has anyway.
# Nsight Compute 2025 prints base units short ("ns", "B"); older versions long ("nsecond", "byte").
SCALE = {"": 1, "%": 1, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "usecond": 1e3,
         "msecond": 1e6, "second": 1e9, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "ns": 1, "us": 1e3, "ms": 1e6,
         "s": 1e9, "register/thread": 1, "thread": 1, "block": 1, "warp": 1, "cycle": 1, "inst": 1}


def kernel_profile(row, units, metrics):
    kernel = {"name": row.get("Kernel Name", "")}
    tensor, stalls = {}, {}
    for metric, key in metrics.items():
        value = number(row.get(metric, ""))
        if value is None:
            continue
        unit = units.get(metric, "")
        if unit not in SCALE and key in ("duration_ns", "dram_bytes_read", "dram_bytes_written"):
            sys.exit(f"gpu_profile: {metric} is in '{unit}', a unit this script does not convert")
        value *= SCALE.get(unit, 1)  # percentages, ratios and counts as printed
        if key.startswith("tensor:"):
            tensor[key[7:]] = value
        elif key.startswith("stall:"):
            stalls[key[6:]] = value
        else:
            kernel[key] = value
    kernel["duration_us"] = kernel.pop("duration_ns", 0) / 1000.0
    # The busiest tensor pipe (HMMA on Ampere-style kernels, GMMA for Hopper's wgmma).
    if tensor:
        pipe, pct = max(tensor.items(), key=lambda item: item[1])
        kernel["tensor_pipe_pct"], kernel["tensor_pipe"] = pct, pipe
    kernel["top_stalls"] = [[reason, value] for reason, value in
                            sorted(stalls.items(), key=lambda item: -item[1])[:4] if value > 0]
    return kernel


def totals(kernels):
    duration = sum(k["duration_us"] for k in kernels)
    weighted = lambda key: (sum(k.get(key, 0) * k["duration_us"] for k in kernels) / duration) if duration else 0
    return {"kernels": len(kernels), "duration_us": duration,
            "dram_bytes_read": sum(k.get("dram_bytes_read", 0) for k in kernels),
            "dram_bytes_written": sum(k.get("dram_bytes_written", 0) for k in kernels),
            "tensor_pipe_pct": weighted("tensor_pipe_pct"), "sm_throughput_pct": weighted("sm_throughput_pct"),
            "achieved_occupancy_pct": weighted("achieved_occupancy_pct")}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--records", required=True)
    parser.add_argument("--op", action="append", default=[])
    parser.add_argument("--ncu", default="ncu")
    args = parser.parse_args()
    metrics = metric_set(args.ncu)
    pins, records = [], {}
    for text in args.op:
        name = dict(pair.split("=", 1) for pair in text.split(","))["name"]
        path = os.path.join(args.records, name + ".json")
        if not os.path.exists(path):  # the runner could not measure the op: nothing to profile
            print(f"gpu_profile: {name}: no record, not profiled", file=sys.stderr)
            continue
        record = json.load(open(path))
        records[name] = (path, record)
        by_name = {p["path"]: p for p in record.get("paths", [])}
        for profiled in record.get("profiled_paths", []):
            pins += ["--pin", f"{name}/{profiled}={by_name[profiled].get('choice', '')}"]
    work = tempfile.mkdtemp(prefix="tessera-profile-")
    report = os.path.join(work, "profile")
    command = [args.ncu, "--profile-from-start", "off", "--clock-control", "none", "--cache-control", "all",
               "--metrics", ",".join(metrics), "-f", "-o", report, args.runner, "--profile", work]
    for text in args.op:
        if dict(pair.split("=", 1) for pair in text.split(","))["name"] in records:
            command += ["--op", text]
    subprocess.run(command + pins, check=True)
    raw = subprocess.run([args.ncu, "-i", report + ".ncu-rep", "--csv", "--page", "raw", "--print-units", "base",
                          "--metrics", ",".join(metrics)], check=True, capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO(raw)))
    units = next((row for row in rows if not row.get("ID", "").strip().isdigit()), {})  # the units row
    rows = [row for row in rows if row.get("ID", "").strip().isdigit()]
    manifest = json.load(open(os.path.join(work, "profile_manifest.json")))
    expected = sum(len(entry["kernels"]) for entry in manifest)
    if expected != len(rows):
        sys.exit(f"gpu_profile: ncu profiled {len(rows)} kernels, the runner launched {expected}")
    cursor = 0
    for entry in manifest:
        kernels = [kernel_profile(row, units, metrics) for row in rows[cursor:cursor + len(entry["kernels"])]]
        cursor += len(entry["kernels"])
        path, record = records[entry["op"]]
        for path_record in record["paths"]:
            if path_record["path"] == entry["path"]:
                path_record["profile"] = {"tool": "Nsight Compute (ncu --clock-control none --cache-control all)",
                                          "kernels": kernels, "totals": totals(kernels)}
    for name, (path, record) in records.items():
        with open(path, "w") as f:
            json.dump(record, f)
        print(f"gpu_profile: {name}: " + ", ".join(
            f"{p['path']} {p['profile']['totals']['duration_us']:.1f} us, "
            f"{p['profile']['totals']['dram_bytes_read'] / 1e6:.2f}+{p['profile']['totals']['dram_bytes_written'] / 1e6:.2f} MB, "
            f"tensor {p['profile']['totals']['tensor_pipe_pct']:.0f}%"
            for p in record["paths"] if "profile" in p), file=sys.stderr)


if __name__ == "__main__":
    main()
