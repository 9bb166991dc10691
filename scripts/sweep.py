#!/usr/bin/python3
"""Runs a what-if sweep of one machine or workload parameter (configs/sweeps/*.yaml): one `tessera run` process
per value (SystemC elaborates one machine per process), in parallel, then writes sweep.csv and sweep.png with
the total cycles and the PE arrays' bubble shares against the parameter.

usage: scripts/sweep.py configs/sweeps/sram-banks.yaml [--out out/sweep] [--jobs N]

A sweep file:
  name: sram-banks
  arch: configs/arch/mesh4x4.yaml          # relative to the repository
  workload: configs/workloads/bert-ffn.yaml
  parameter: core.sram.banks               # any --set path
  values: [2, 4, 8, 16, 32]
  timing_only: true                        # optional (default true)
  dataflow: all                            # optional
"""
import argparse
import concurrent.futures
import csv
import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_one(binary, sweep, value, out):
    command = [binary, "run", "--arch", os.path.join(ROOT, sweep["arch"]), "--workload",
               os.path.join(ROOT, sweep["workload"]), "--set", f'{sweep["parameter"]}={value}', "--format", "json",
               "--quiet", "--threads", "1", "--dataflow", str(sweep.get("dataflow", "all"))]
    if sweep.get("timing_only", True):
        command.append("--timing-only")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{sweep['parameter']}={value}: tessera failed ({done.returncode}):\n{done.stderr}")
    with open(os.path.join(out, f"report-{value}.json"), "w") as f:
        f.write(done.stdout)
    return value, json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep")
    parser.add_argument("--out", default=None)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "tessera"))
    args = parser.parse_args()
    with open(args.sweep) as f:
        sweep = yaml.safe_load(f)
    out = args.out or os.path.join(ROOT, "out", "sweep-" + sweep["name"])
    os.makedirs(out, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, args.binary, sweep, value, out) for value in sweep["values"]]
        results = []
        for future in concurrent.futures.as_completed(futures):
            value, report = future.result()
            print(f'{sweep["parameter"]}={value}: {report["totals"]["cycles"]} cycles', file=sys.stderr)
            results.append((value, report))
    results.sort(key=lambda item: sweep["values"].index(item[0]))

    causes = results[0][1]["bubble_causes"]
    rows = []
    for value, report in results:
        pe = {cause: 0 for cause in causes}
        for op in report["ops"]:
            best = next(run for run in op["runs"] if run["winner"])
            for cause in causes:
                pe[cause] += best["bubbles_by_kind"]["pe"][cause]
        total = sum(pe.values()) or 1
        row = {"value": value, "cycles": report["totals"]["cycles"], "time_us": report["totals"]["time_us"],
               "dram_bytes": report["totals"]["dram_bytes"], "energy_uj": report["totals"]["energy_uj"]}
        row.update({f"pe_{cause}_share": pe[cause] / total for cause in causes})
        rows.append(row)
    with open(os.path.join(out, "sweep.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 6), sharex=True)
    labels = [str(row["value"]) for row in rows]
    top.plot(labels, [row["cycles"] for row in rows], marker="o")
    top.set_ylabel("cycles (all ops)")
    top.set_title(f'{sweep["name"]}: {sweep["workload"]} on {sweep["arch"]}', fontsize=9)
    base = [0.0] * len(rows)
    for cause in causes:
        shares = [row[f"pe_{cause}_share"] for row in rows]
        bottom.bar(labels, shares, bottom=base, label=cause)
        base = [b + s for b, s in zip(base, shares)]
    bottom.set_ylabel("PE-array time share")
    bottom.set_xlabel(sweep["parameter"])
    bottom.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sweep.png"), dpi=120)
    print(os.path.join(out, "sweep.csv"))
    print(os.path.join(out, "sweep.png"))


if __name__ == "__main__":
    sys.exit(main())
