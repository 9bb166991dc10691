#!/usr/bin/python3
"""Plots a tessera report.json: per op, the cycles of each dataflow's best mapping split into busy and bubble
causes (summed over the PE arrays), with the winner marked. A view of the report, like the terminal table.

usage: scripts/plot_report.py out/report.json [-o out/report.png]
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {
    "busy": "#2e7d32", "fill_drain": "#9ccc65", "input_starvation": "#e53935", "output_backpressure": "#fb8c00",
    "noc": "#8e24aa", "bank_conflict": "#3949ab", "sync": "#bdbdbd",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report")
    parser.add_argument("-o", "--output", help="PNG to write (default: next to the report)")
    args = parser.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    # Pools and other ops that were not simulated have no bars.
    ops = [op for op in report["ops"] if op.get("runs")]
    if not ops:
        sys.exit("no simulated op in " + args.report)
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
            shares = []
            for run in op["runs"]:
                pe = run["bubbles_by_kind"].get("pe", {})
                total = sum(pe.values()) or 1
                shares.append(run["cycles"] * pe.get(cause, 0) / total)
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
    output = args.output or args.report.rsplit(".", 1)[0] + ".png"
    fig.savefig(output, dpi=120)
    print(output)


if __name__ == "__main__":
    sys.exit(main())
