#!/usr/bin/python3
"""Runs a what-if sweep (configs/sweeps/*.yaml) with `tessera sweep` and plots its first grid axis: the total
cycles of each workload and the PE arrays' bubble shares against it (sweep.png beside results.csv). The sweep
itself (points, processes, resume, shards, results.csv) is the tessera command's; this script only draws.

usage: scripts/sweep.py configs/sweeps/sram-banks.yaml [--out out/sweep-NAME] [--jobs N]
"""
import argparse
import csv
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXED = ["point", "point_id"]
AFTER_AXES = "workload"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep")
    parser.add_argument("--out", default=None)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "tessera"))
    args = parser.parse_args()
    name = os.path.splitext(os.path.basename(args.sweep))[0]
    out = args.out or os.path.join(ROOT, "out", "sweep-" + name)
    done = subprocess.run([args.binary, "sweep", args.sweep, "--out", out, "--jobs", str(args.jobs)])
    if done.returncode not in (0, 1):
        return done.returncode

    with open(os.path.join(out, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    header = list(rows[0].keys())
    axes = header[len(FIXED):header.index(AFTER_AXES)]
    totals = [row for row in rows if row["op"] == "(total)" and row["status"] in ("ok", "mismatch")]
    if not axes or not totals:
        print(f"{out}/results.csv: nothing to plot (no grid axis or no finished point)", file=sys.stderr)
        return done.returncode
    axis = axes[0]
    causes = [column for column in header if column.startswith("pe_") and column.endswith("_share")]

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 6), sharex=True)
    labels = list(dict.fromkeys(row[axis] for row in totals))
    for workload in dict.fromkeys(row["workload"] for row in totals):
        # Other axes' points at each value of the first one: their mean.
        means = []
        for label in labels:
            cycles = [int(row["cycles"]) for row in totals if row["workload"] == workload and row[axis] == label]
            means.append(sum(cycles) / len(cycles) if cycles else float("nan"))
        top.plot(labels, means, marker="o", label=workload)
    top.set_ylabel("cycles (all ops)")
    top.set_title(f"{name}: {', '.join(axes)}", fontsize=9)
    top.legend(fontsize=7)
    base = [0.0] * len(labels)
    for cause in causes:
        shares = []
        for label in labels:
            values = [float(row[cause]) for row in totals if row[axis] == label]
            shares.append(sum(values) / len(values))
        bottom.bar(labels, shares, bottom=base, label=cause[len("pe_"):-len("_share")])
        base = [b + s for b, s in zip(base, shares)]
    bottom.set_ylabel("PE-array time share")
    bottom.set_xlabel(axis)
    bottom.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sweep.png"), dpi=120)
    print(os.path.join(out, "results.csv"))
    print(os.path.join(out, "sweep.png"))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
