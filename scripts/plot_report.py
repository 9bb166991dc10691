#!/usr/bin/python3
"""Plots a tessera report.json: per op, the cycles of each dataflow's best mapping split into busy and bubble
causes (summed over the PE arrays), with the winner marked. A view of the report, like the terminal table.
With --layers: one bar per op (layer), its winner's cycles split the same way, the workload at a glance.

usage: scripts/plot_report.py out/report.json [-o out/report.png] [--layers]
       scripts/plot_report.py out/               (a `tessera run --out` folder: its report.json)
       scripts/plot_report.py SWEEP_DIR/points/<id>/<workload>/   (one job of a sweep)
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {
    "busy": "#2e7d32", "fill_drain": "#9ccc65", "input_starvation": "#e53935", "output_backpressure": "#fb8c00",
    "noc": "#8e24aa", "bank_conflict": "#3949ab", "sync": "#bdbdbd", "vector": "#00acc1", "imbalance": "#6d4c41",
}


def split(run, cause):
    """The run's cycles times the PE arrays' share of `cause` (summed over the cores)."""
    pe = run["bubbles_by_kind"].get("pe", {})
    return run["cycles"] * pe.get(cause, 0) / (sum(pe.values()) or 1)


def plot_layers(report, ops, output):
    """One bar per op: its winner's cycles split into busy and bubble causes."""
    causes = report["bubble_causes"]
    winners = [next(run for run in op["runs"] if run["winner"]) for op in ops]
    labels = [f'{op["name"]} ({run["dataflow"]})' for op, run in zip(ops, winners)]
    fig, axis = plt.subplots(figsize=(max(5.0, 1.5 + 0.42 * len(ops)), 4.2))
    bottoms = [0.0] * len(ops)
    for cause in causes:
        heights = [split(run, cause) for run in winners]
        if any(heights):
            axis.bar(labels, heights, bottom=bottoms, color=COLOURS.get(cause), label=cause)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    axis.set_ylabel("cycles (the winner's PE arrays)", fontsize=8)
    axis.tick_params(axis="x", labelrotation=60, labelsize=7)
    axis.tick_params(axis="y", labelsize=7)
    axis.legend(fontsize=7, loc="upper left")
    total = report.get("totals", {}).get("cycles")
    axis.set_title(f'{report["machine"]} / {report["workload"]}: per layer'
                   + (f", {total:,} cycles in all" if total else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(output, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report")
    parser.add_argument("-o", "--output", help="PNG to write (default: next to the report)")
    parser.add_argument("--layers", action="store_true", help="one bar per op (its winner) instead of per dataflow")
    args = parser.parse_args()
    if os.path.isdir(args.report):
        args.report = os.path.join(args.report, "report.json")
    with open(args.report) as f:
        report = json.load(f)
    # Pools and other ops that were not simulated have no bars.
    ops = [op for op in report["ops"] if op.get("runs")]
    if not ops:
        sys.exit("no simulated op in " + args.report)
    output = args.output or args.report.rsplit(".", 1)[0] + ("-layers" if args.layers else "") + ".png"
    if args.layers:
        plot_layers(report, ops, output)
        print(output)
        return 0
    causes = report["bubble_causes"]
    bars = max(len(op["runs"]) for op in ops)
    per_row = min(len(ops), 6)
    rows = (len(ops) + per_row - 1) // per_row
    width = max(2.8, 1.2 + 0.55 * bars)  # inches per op: room for its title and each dataflow's label
    fig, axes = plt.subplots(rows, per_row, figsize=(width * per_row, 3.8 * rows + 0.6), squeeze=False)
    for axis in axes.flat[len(ops):]:
        axis.set_visible(False)
    for axis, op in zip(axes.flat, ops):
        labels, bottoms = [], [0.0] * len(op["runs"])
        for run in op["runs"]:
            labels.append(("* " if run["winner"] else "") + run["dataflow"])
        for cause in causes:
            shares = [split(run, cause) for run in op["runs"]]
            axis.bar(labels, shares, bottom=bottoms, color=COLOURS.get(cause), label=cause)
            bottoms = [b + s for b, s in zip(bottoms, shares)]
        axis.set_title(f'{op["name"]}\n{op["kind"]} {op["shape"]} {op["dtype"]}', fontsize=7)
        axis.tick_params(axis="x", labelrotation=45, labelsize=7)
        axis.tick_params(axis="y", labelsize=7)
    for row in axes:
        row[0].set_ylabel("cycles (PE arrays)", fontsize=8)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="lower center", ncol=min(len(causes), 4))
    fig.suptitle(f'{report["machine"]} / {report["workload"]}', fontsize=10)
    fig.tight_layout(rect=(0, 0.1 / rows + 0.03, 1, 1))
    fig.savefig(output, dpi=120)
    print(output)


if __name__ == "__main__":
    sys.exit(main())
