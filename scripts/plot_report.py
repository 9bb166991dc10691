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
    ops = report["ops"]
    causes = report["bubble_causes"]
    fig, axes = plt.subplots(1, len(ops), figsize=(4.2 * len(ops), 4.2), squeeze=False)
    for axis, op in zip(axes[0], ops):
        labels, bottoms = [], [0.0] * len(op["runs"])
        for i, run in enumerate(op["runs"]):
            labels.append(("* " if run["winner"] else "") + run["dataflow"])
        for cause in causes:
            shares = []
            for run in op["runs"]:
                pe = run["bubbles_by_kind"].get("pe", {})
                total = sum(pe.values()) or 1
                shares.append(run["cycles"] * pe.get(cause, 0) / total)
            axis.bar(labels, shares, bottom=bottoms, color=COLOURS.get(cause), label=cause)
            bottoms = [b + s for b, s in zip(bottoms, shares)]
        axis.set_title(f'{op["name"]} ({op["kind"]} {op["shape"]} {op["dtype"]})', fontsize=9)
        axis.set_ylabel("cycles (PE arrays: busy and bubbles)")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="lower center", ncol=len(causes))
    fig.suptitle(f'{report["machine"]} / {report["workload"]}', fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    output = args.output or args.report.rsplit(".", 1)[0] + ".png"
    fig.savefig(output, dpi=120)
    print(output)


if __name__ == "__main__":
    sys.exit(main())
