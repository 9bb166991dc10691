#!/usr/bin/python3
"""Plots a finished `tessera sweep` folder (results.csv and points/<id>/<workload>/report.json), PNGs beside it:

  metric-<cycles|energy|edp>.png  a workload's total against each swept axis, one line per dataflow (every op
                                  run with that dataflow's best mapping, from the reports' runs) and the best
                                  (each op's winner); the mean over the other axes' points
  winner-map.png                  the winning dataflow over two axes (--map X Y; default the first two that
                                  move on their own): per cell, the dataflow that won the most of the
                                  workload's cycles over the points in it, and that share
  roofline.png                    every op of every point: achieved GFLOP/s (2 x MACs / time) against its
                                  arithmetic intensity (2 x MACs / DRAM bytes), under the roofs of its point's
                                  machine: compute = mesh cores x PE rows x cols x 2 FLOP x clock, bandwidth =
                                  dram.bandwidth_gbps; read from the sweep's arch file (--sweep) with the
                                  point's grid values put in
  bubbles.png                     the PE arrays' time of each op (layer) split into busy and each bubble cause
                                  (results.csv's pe_*_share of the op's winner), one point (--point, default 0)

usage: scripts/plot_sweep.py DIR [--sweep SWEEP.yaml] [--metric cycles|energy|edp|all] [--map X Y] [--point N]
"""
import argparse
import csv
import glob
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXED = ["point", "point_id"]
AFTER_AXES = "workload"
FINISHED = ("ok", "mismatch")
DATAFLOW_COLOURS = {"ws": "#1e88e5", "os": "#43a047", "is": "#fb8c00", "rs": "#8e24aa", "best": "#212121"}
CAUSE_COLOURS = {
    "busy": "#2e7d32", "fill_drain": "#9ccc65", "input_starvation": "#e53935", "output_backpressure": "#fb8c00",
    "noc": "#8e24aa", "bank_conflict": "#3949ab", "sync": "#bdbdbd", "vector": "#00acc1", "imbalance": "#6d4c41",
}
METRICS = {  # name -> (label, value from a (cycles, time_us, energy_uj) total)
    "cycles": ("cycles", lambda c, t, e: c),
    "energy": ("energy (uJ)", lambda c, t, e: e),
    "edp": ("energy x delay (uJ x us)", lambda c, t, e: e * t),
}


def number(text):
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() else value


def sorted_values(values):
    values = list(dict.fromkeys(values))
    try:
        return sorted(values, key=float)
    except ValueError:
        return values


def free_axes(rows, axes):
    """The axes that move on their own: a zipped axis (its value a function of an earlier one's) is left out."""
    free = []
    for axis in axes:
        zipped = False
        for earlier in free:
            seen = {}
            if all(seen.setdefault(row[earlier], row[axis]) == row[axis] for row in rows):
                zipped = True
                break
        if not zipped:
            free.append(axis)
    return free


class Sweep:
    def __init__(self, folder):
        self.folder = folder
        with open(os.path.join(folder, "results.csv"), newline="") as f:
            self.rows = list(csv.DictReader(f))
        if not self.rows:
            sys.exit(f"{folder}/results.csv: no rows")
        header = list(self.rows[0].keys())
        self.axes = header[len(FIXED):header.index(AFTER_AXES)]
        self.causes = [c[len("pe_"):-len("_share")] for c in header if c.startswith("pe_") and c.endswith("_share")]
        self.finished = [row for row in self.rows if row["status"] in FINISHED]
        self.totals = [row for row in self.finished if row["op"] == "(total)"]
        self.ops = [row for row in self.finished if row["op"] != "(total)"]
        self.workloads = list(dict.fromkeys(row["workload"] for row in self.rows))
        self.reports = {}
        self.name = os.path.basename(os.path.normpath(folder))
        manifest = os.path.join(folder, "sweep.json")
        if os.path.exists(manifest):
            with open(manifest) as f:
                self.name = json.load(f).get("name", self.name)

    def report(self, row):
        """The report.json of a row's job (points/<point_id>/<workload file>/report.json)."""
        key = (row["point_id"], row["workload"])
        if key not in self.reports:
            # A merged folder (scripts/slurm-sweep.sh's OUT/merged) has its points in the shards beside it.
            places = [self.folder] + sorted(glob.glob(os.path.join(self.folder, os.pardir, "shard-*")))
            folders = [os.path.join(place, "points", row["point_id"]) for place in places]
            found = None
            jobs = [os.path.join(f, job) for f in folders if os.path.isdir(f) for job in sorted(os.listdir(f))]
            for job in jobs:
                path = os.path.join(job, "report.json")
                if os.path.exists(path):
                    with open(path) as f:
                        report = json.load(f)
                    if report.get("workload") == row["workload"]:
                        found = report
                        break
            self.reports[key] = found
        return self.reports[key]


def per_dataflow_totals(sweep, total):
    """(cycles, time_us, energy_uj) of the workload with every op on one dataflow of the PE arrays (its fastest run
    of that dataflow: fused or not, lowered or direct), per dataflow that ran for every such op; an op with one
    choice only (a pool on the vector unit) counts in each. 'best' is each op's winner (the results.csv total)."""
    out = {"best": (int(total["cycles"]), float(total["time_us"]), float(total["energy_uj"]))}
    report = sweep.report(total)
    if not report:
        return out
    sums, fixed, complete = {}, (0, 0.0, 0.0), None
    for op in report["ops"]:
        flows = {}
        for run in op.get("runs") or []:
            flow = run["dataflow"].split("-")[0]  # ws-direct is ws on the direct convolution
            if flow not in flows or run["cycles"] < flows[flow]["cycles"]:
                flows[flow] = run
        if len(flows) == 1 and next(iter(flows)) not in ("ws", "os", "is", "rs"):
            run = next(iter(flows.values()))
            fixed = (fixed[0] + run["cycles"], fixed[1] + run["time_us"], fixed[2] + run["energy_uj"])
            continue
        if not flows:
            continue
        complete = set(flows) if complete is None else complete & set(flows)
        for flow, run in flows.items():
            c, t, e = sums.get(flow, (0, 0.0, 0.0))
            sums[flow] = (c + run["cycles"], t + run["time_us"], e + run["energy_uj"])
    for flow in sorted(complete or ()):
        out[flow] = tuple(a + b for a, b in zip(sums[flow], fixed))
    return out


def plot_metric(sweep, metric, path):
    label, value = METRICS[metric]
    axes = free_axes(sweep.totals, sweep.axes)
    workloads = [w for w in sweep.workloads if any(r["workload"] == w for r in sweep.totals)]
    fig, grid = plt.subplots(len(workloads), len(axes), figsize=(3.6 * len(axes), 2.9 * len(workloads) + 0.4),
                             squeeze=False)
    totals_of = {id(row): per_dataflow_totals(sweep, row) for row in sweep.totals}
    previous_flows = None
    for r, workload in enumerate(workloads):
        rows = [row for row in sweep.totals if row["workload"] == workload]
        flows = sorted({f for row in rows for f in totals_of[id(row)]}, key=lambda f: (f == "best", f))
        for c, axis in enumerate(axes):
            ax = grid[r][c]
            xs = sorted_values(row[axis] for row in rows)
            others = [a for a in axes if a != axis]
            for flow in flows:
                # The mean over the other axes' points where this dataflow ran at every value of this axis, so
                # that each x averages the same points (a dataflow with no legal mapping at some points would
                # otherwise bend its line by which points it leaves out).
                by_rest = {}
                for row in rows:
                    by_rest.setdefault(tuple(row[a] for a in others), {})[row[axis]] = totals_of[id(row)]
                kept = [cells for cells in by_rest.values()
                        if all(x in cells and flow in cells[x] for x in xs)]
                ys = []
                for x in xs:
                    vals = [value(*cells[x][flow]) for cells in kept]
                    ys.append(sum(vals) / len(vals) if vals else math.nan)
                ax.plot(xs, ys, marker="o", ms=3, lw=2.2 if flow == "best" else 1.2,
                        ls="--" if flow == "best" else "-", color=DATAFLOW_COLOURS.get(flow), label=flow)
            finite = [y for line in ax.get_lines() for y in line.get_ydata() if y == y and y > 0]
            if finite and max(finite) > 20 * min(finite):
                ax.set_yscale("log")
            ax.set_xlabel(axis, fontsize=8)
            ax.tick_params(labelsize=7)
            if c == 0:
                ax.set_ylabel(f"{workload}\n{label}", fontsize=8)
        if r == 0 or flows != previous_flows:  # a legend wherever the dataflows differ from the row above's
            grid[r][0].legend(fontsize=7)
        previous_flows = flows
    fig.suptitle(f"{sweep.name}: {label} per dataflow (mean over the other axes' points)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_winner_map(sweep, pair, path):
    axes = free_axes(sweep.totals, sweep.axes)
    if pair is None:
        if len(axes) < 2:
            print("winner map: fewer than two free axes, skipped", file=sys.stderr)
            return False
        pair = axes[:2]
    for axis in pair:
        if axis not in sweep.axes:
            sys.exit(f"--map {axis}: not an axis of this sweep ({', '.join(sweep.axes)})")
    x_axis, y_axis = pair
    workloads = [w for w in sweep.workloads if any(r["workload"] == w for r in sweep.ops)]
    # Coloured by the PE arrays' dataflow (ws-direct, the direct convolution, is ws), labelled in full.
    family = lambda flow: flow.split("-")[0]  # noqa: E731
    flows = sorted({family(row["dataflow"]) for row in sweep.ops if row["dataflow"]})
    fig, grid = plt.subplots(1, len(workloads), figsize=(3.8 * len(workloads), 3.4), squeeze=False)
    for ax, workload in zip(grid[0], workloads):
        rows = [row for row in sweep.ops if row["workload"] == workload]
        xs, ys = sorted_values(r[x_axis] for r in rows), sorted_values(r[y_axis] for r in rows)
        image = [[math.nan] * len(xs) for _ in ys]
        for j, y in enumerate(ys):
            for i, x in enumerate(xs):
                won = {}
                for row in rows:
                    if row[x_axis] == x and row[y_axis] == y and row["dataflow"]:
                        won[row["dataflow"]] = won.get(row["dataflow"], 0) + int(row["cycles"])
                if won:
                    best = max(sorted(won), key=won.get)
                    image[j][i] = flows.index(family(best))
                    ax.text(i, j, f"{best}\n{won[best] / sum(won.values()):.0%}", ha="center", va="center",
                            fontsize=8)
        cmap = matplotlib.colors.ListedColormap([DATAFLOW_COLOURS.get(f, "#757575") for f in flows])
        ax.imshow(image, origin="lower", cmap=cmap, vmin=-0.5, vmax=len(flows) - 0.5, aspect="auto")
        ax.set_xticks(range(len(xs)), xs, fontsize=7)
        ax.set_yticks(range(len(ys)), ys, fontsize=7)
        ax.set_xlabel(x_axis, fontsize=8)
        ax.set_ylabel(y_axis, fontsize=8)
        ax.set_title(workload, fontsize=9)
    fig.suptitle(f"{sweep.name}: the winning dataflow\n(its share of the workload's cycles, over the other axes' "
                 "points)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def set_path(config, path, value):
    node = config
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def machine_roofs(arch, row, axes, clock_ghz):
    """(peak GFLOP/s, DRAM GB/s) of the row's point: the arch file with the point's grid values put in."""
    import copy
    config = copy.deepcopy(arch)
    for axis in axes:
        if axis.split(".")[0] in ("core", "mesh", "dram", "noc", "clock_ghz"):
            set_path(config, axis, number(row[axis]))
    mesh = config.get("mesh", {"rows": 1, "cols": 1})
    pe = config["core"]["pe_array"]
    peak = 2 * mesh["rows"] * mesh["cols"] * pe["rows"] * pe["cols"] * config.get("clock_ghz", clock_ghz)
    return peak, config["dram"]["bandwidth_gbps"]


def plot_roofline(sweep, sweep_file, path):
    import yaml
    with open(sweep_file) as f:
        spec = yaml.safe_load(f)
    arch_path = spec["arch"] if os.path.isabs(spec["arch"]) else os.path.join(ROOT, spec["arch"])
    with open(arch_path) as f:
        arch = yaml.safe_load(f)
    fig, ax = plt.subplots(figsize=(7, 4.6))
    roofs, markers, intensities, closest = set(), {}, [], (0.0, "")
    for row in sweep.ops:
        report = sweep.report(row)
        op = next((o for o in (report or {}).get("ops", []) if o["name"] == row["op"]), None)
        if not op or not op.get("macs") or float(row["time_us"]) <= 0 or int(row["dram_bytes"]) <= 0:
            continue
        flops = 2 * op["macs"]
        intensity = flops / int(row["dram_bytes"])
        gflops = flops / float(row["time_us"]) / 1e3
        peak, bandwidth = machine_roofs(arch, row, sweep.axes, report["clock_ghz"])
        roofs.add((peak, bandwidth))
        intensities.append(intensity)
        roof = min(peak, bandwidth * intensity)
        closest = max(closest, (gflops / roof, f'point {row["point"]} {row["workload"]} {row["op"]}'))
        if gflops > roof * 1.001:  # a simulator beating its machine's roof is a bug, not a result
            print(f'roofline: point {row["point"]} {row["workload"]} {row["op"]}: {gflops:.1f} GFLOP/s is above '
                  f"its roof {roof:.1f} (peak {peak:g}, {bandwidth:g} GB/s x {intensity:.2f} FLOP/B)",
                  file=sys.stderr)
        marker = markers.setdefault(row["workload"], "os^vD"[len(markers) % 5])
        ax.scatter(intensity, gflops, s=12, marker=marker, color=DATAFLOW_COLOURS.get(row["dataflow"], "#757575"),
                   alpha=0.7, linewidths=0)
    if not roofs:
        print("roofline: no op with MACs and DRAM traffic, skipped", file=sys.stderr)
        plt.close(fig)
        return False
    # From below the least intense op to past the highest ridge point (peak / bandwidth).
    lo = min(min(intensities), min(p / b for p, b in roofs)) / 3
    hi = max(max(intensities), max(p / b for p, b in roofs)) * 3
    xs = [lo * (hi / lo) ** (k / 100) for k in range(101)]
    for peak, bandwidth in sorted(roofs):
        ax.plot(xs, [min(peak, bandwidth * x) for x in xs], color="#9e9e9e", lw=0.8, alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("achieved GFLOP/s")
    handles = [plt.Line2D([], [], ls="", marker=m, color="#616161", label=w) for w, m in markers.items()]
    handles += [plt.Line2D([], [], ls="", marker="s", color=DATAFLOW_COLOURS[f], label=f"winner {f}")
                for f in sorted({r["dataflow"] for r in sweep.ops if r["dataflow"] in DATAFLOW_COLOURS})]
    handles.append(plt.Line2D([], [], color="#9e9e9e", label=f"roofs of the {len(roofs)} machines"))
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    print(f"roofline: {len(intensities)} ops under {len(roofs)} machines' roofs, the closest {closest[1]} at "
          f"{closest[0]:.1%} of its roof", file=sys.stderr)
    ax.set_xlim(lo, hi)
    ax.set_title(f"{sweep.name}: every op of every point under its machine's compute and DRAM roofs", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_bubbles(sweep, point, path):
    rows = [row for row in sweep.ops if row["point"] == str(point)]
    if not rows:
        sys.exit(f"--point {point}: no finished op rows in results.csv")
    workloads = list(dict.fromkeys(row["workload"] for row in rows))
    sizes = [sum(1 for r in rows if r["workload"] == w) for w in workloads]
    fig, grid = plt.subplots(1, len(workloads), figsize=(1.2 + 0.45 * sum(sizes) + 1.2 * len(workloads), 3.8),
                             squeeze=False, gridspec_kw={"width_ratios": sizes})
    for ax, workload in zip(grid[0], workloads):
        ops = [row for row in rows if row["workload"] == workload]
        labels = [f'{row["op"]} ({row["dataflow"]})' for row in ops]
        base = [0.0] * len(ops)
        for cause in sweep.causes:
            shares = [float(row[f"pe_{cause}_share"] or 0) for row in ops]
            if any(shares):
                ax.bar(labels, shares, bottom=base, color=CAUSE_COLOURS.get(cause), label=cause)
            base = [b + s for b, s in zip(base, shares)]
        ax.set_title(workload, fontsize=9)
        ax.set_ylim(0, 1)
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        ax.tick_params(axis="y", labelsize=7)
    grid[0][0].set_ylabel("share of the PE arrays' time", fontsize=8)
    handles = {}
    for ax in grid[0]:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(name, handle)
    fig.legend(handles.values(), handles.keys(), fontsize=7, loc="center right")
    setting = ", ".join(f"{axis}={rows[0][axis]}" for axis in sweep.axes)
    fig.suptitle(f"{sweep.name}: bubble shares per layer, point {point}: {setting}", fontsize=8)
    fig.tight_layout(rect=(0, 0, 0.88, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="a tessera sweep --out folder (or a merged one with the shards' points)")
    parser.add_argument("--sweep", help="the sweep YAML (for the roofline's machine); no roofline without it")
    parser.add_argument("--metric", default="all", choices=[*METRICS, "all"])
    parser.add_argument("--map", nargs=2, metavar=("X", "Y"), help="the winner map's two axes")
    parser.add_argument("--point", type=int, default=0, help="the bubbles plot's point (default 0)")
    parser.add_argument("-o", "--output", help="folder for the PNGs (default: the sweep folder)")
    args = parser.parse_args()
    sweep = Sweep(args.folder)
    if not sweep.finished:
        sys.exit(f"{args.folder}/results.csv: no finished point")
    out = args.output or args.folder
    os.makedirs(out, exist_ok=True)
    written = []
    for metric in METRICS if args.metric == "all" else [args.metric]:
        written.append(os.path.join(out, f"metric-{metric}.png"))
        plot_metric(sweep, metric, written[-1])
    if plot_winner_map(sweep, args.map, os.path.join(out, "winner-map.png")):
        written.append(os.path.join(out, "winner-map.png"))
    if args.sweep and plot_roofline(sweep, args.sweep, os.path.join(out, "roofline.png")):
        written.append(os.path.join(out, "roofline.png"))
    written.append(os.path.join(out, "bubbles.png"))
    plot_bubbles(sweep, args.point, written[-1])
    print("\n".join(written))


if __name__ == "__main__":
    sys.exit(main())
