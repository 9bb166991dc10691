#!/usr/bin/python3
"""The cost model against the simulator (issue "Fidelity", section 4): runs `tessera run --timing-only` over
every shipped workload x machine and prints how far the analytical estimate of each simulated row (a dataflow,
fused or unfused: the candidate the cost model ranks first in that row, alone: --simulate-top 1
--refine-rounds 0) is from its simulated cycles, and how often the row the cost model ranks best is within 5%
of the simulated best.

usage: scripts/cost-vs-sim.py [--arch NAME ...] [--workload NAME ...] [--skip-slow] [--jobs N] [--json]
                              [--per-op] [--save DIR | --load DIR]

  ratio        analytical_cycles / cycles of one simulated row (1.0: exact; < 1: the model is optimistic)
  ranking      per op with two or more simulated rows: the row of least analytical_cycles against the row of
               least simulated cycles; a hit when its simulated cycles are within 5% of the best's
  --save DIR   keep each report (DIR/<machine>--<workload>.json); --load DIR reads them back, runs nothing
               (a before/after comparison of two builds without re-simulating)

A benchmark that prints figures, not a test (tests/e2e/cost_vs_sim_test.cpp checks a fast subset against
stated bands). Debian python3 only.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Minutes each on some machines (the MoE layers at prefill, a whole Llama-2 layer): --skip-slow leaves them.
SLOW = {"mixtral-8x7b-moe", "qwen3-30b-a3b-moe", "deepseek-v3-moe", "llama2-7b-layer", "gemm-8192"}
RANK_TOLERANCE = 1.05


def shipped(folder):
    return sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "configs", folder, "*.yaml")))


def run_one(binary, machine, workload, threads, timeout_s, save):
    command = [binary, "run", "--arch", os.path.join(ROOT, "configs", "arch", machine + ".yaml"), "--workload",
               os.path.join(ROOT, "configs", "workloads", workload + ".yaml"), "--timing-only", "--format", "json",
               "--simulate-top", "1", "--refine-rounds", "0", "--quiet", "--threads", str(threads)]
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return machine, workload, None, f"timed out after {timeout_s} s", time.monotonic() - start
    seconds = time.monotonic() - start
    if done.returncode != 0:
        return machine, workload, None, f"exit {done.returncode}: {done.stderr.strip()}", seconds
    if save:
        with open(os.path.join(save, f"{machine}--{workload}.json"), "w") as f:
            f.write(done.stdout)
    return machine, workload, json.loads(done.stdout), None, seconds


def row_label(run):
    return run["dataflow"] + (" " + run["fusion"] if run.get("fusion") else "")


def spread(values):
    values = sorted(values)
    if not values:
        return None

    def quantile(q):  # linear interpolation between closest ranks
        position = q * (len(values) - 1)
        low = int(position)
        high = min(low + 1, len(values) - 1)
        return values[low] + (values[high] - values[low]) * (position - low)

    return {"n": len(values), "median": statistics.median(values), "p10": quantile(0.10), "p90": quantile(0.90),
            "min": values[0], "max": values[-1]}


def analyse(reports):
    """reports: [(machine, workload, report)] -> the figures (a plain dict, what --json prints)."""
    ops, rows = [], []
    for machine, workload, report in reports:
        for op in report["ops"]:
            runs = [r for r in op.get("runs", []) if r.get("cycles", 0) > 0]
            if not runs:
                continue
            entry = {"machine": machine, "workload": workload, "op": op["name"], "kind": op["kind"], "rows": []}
            for run in runs:
                ratio = run["analytical_cycles"] / run["cycles"]
                row = {"machine": machine, "workload": workload, "op": op["name"], "kind": op["kind"],
                       "row": row_label(run), "dataflow": run["dataflow"], "estimate": run["analytical_cycles"],
                       "simulated": run["cycles"], "ratio": ratio, "bound": run.get("analytical_bound"),
                       "winner": run["winner"], "candidates_simulated": run.get("candidates_simulated", 1)}
                entry["rows"].append(row)
                rows.append(row)
            if len(runs) >= 2:
                by_estimate = min(entry["rows"], key=lambda r: (r["estimate"], r["simulated"]))
                by_simulation = min(entry["rows"], key=lambda r: r["simulated"])
                entry["ranking"] = {"model_best": by_estimate["row"], "simulated_best": by_simulation["row"],
                                    "model_best_cycles": by_estimate["simulated"],
                                    "simulated_best_cycles": by_simulation["simulated"],
                                    "behind": by_estimate["simulated"] / by_simulation["simulated"]}
                entry["ranking"]["hit"] = entry["ranking"]["behind"] <= RANK_TOLERANCE
            ops.append(entry)

    def grouped(key):
        groups = {}
        for row in rows:
            groups.setdefault(key(row), []).append(row["ratio"])
        return {name: spread(values) for name, values in sorted(groups.items())}

    def ranking(selected):
        ranked = [o for o in selected if "ranking" in o]
        hits = sum(1 for o in ranked if o["ranking"]["hit"])
        return {"ops": len(selected), "ranked": len(ranked), "hits": hits,
                "share": hits / len(ranked) if ranked else None}

    pairs = sorted({(r["machine"], r["workload"]) for r in rows})
    per_pair = {}
    for machine, workload in pairs:
        selected = [r["ratio"] for r in rows if r["machine"] == machine and r["workload"] == workload]
        per_pair[f"{machine} {workload}"] = {
            "ratio": spread(selected),
            "ranking": ranking([o for o in ops if o["machine"] == machine and o["workload"] == workload])}
    misses = [o for o in ops if "ranking" in o and not o["ranking"]["hit"]]
    misses.sort(key=lambda o: -o["ranking"]["behind"])
    return {"overall": {"ratio": spread([r["ratio"] for r in rows]), "ranking": ranking(ops)},
            "by_kind": grouped(lambda r: r["kind"]), "by_dataflow": grouped(lambda r: r["row"]),
            "by_machine": grouped(lambda r: r["machine"]), "per_pair": per_pair, "misses": misses, "ops": ops}


def format_spread(s):
    if not s:
        return "-"
    return (f"{s['n']:5d} {s['median']:7.3f} {s['p10']:7.3f} {s['p90']:7.3f} {s['min']:7.3f} {s['max']:7.3f}")


HEADER = f"{'n':>5} {'median':>7} {'p10':>7} {'p90':>7} {'min':>7} {'max':>7}"


def print_table(figures, per_op, failures):
    if per_op:
        print("Per op: each simulated row's estimate / simulated cycles")
        for o in figures["ops"]:
            cells = ", ".join(f"{r['row']} {r['ratio']:.3f}" + ("*" if r["winner"] else "") for r in o["rows"])
            print(f"  {o['machine']:16} {o['workload']:18} {o['op']:24} {o['kind']:10} {cells}")
        print("  (* the simulated winner)\n")
    for title, key in (("By op kind", "by_kind"), ("By row (dataflow, fusion)", "by_dataflow"),
                       ("By machine", "by_machine")):
        print(f"{title}: ratio estimate / simulated")
        print(f"  {'':28} {HEADER}")
        for name, s in figures[key].items():
            print(f"  {name:28} {format_spread(s)}")
        print()
    print("Per machine x workload: ratio, and ranking (cost model's best within 5% of the simulated best)")
    print(f"  {'':40} {HEADER}  ranking")
    for name, pair in figures["per_pair"].items():
        r = pair["ranking"]
        rank = f"{r['hits']}/{r['ranked']}" if r["ranked"] else "-"
        print(f"  {name:40} {format_spread(pair['ratio'])}  {rank}")
    overall = figures["overall"]
    r = overall["ranking"]
    print(f"\nOverall ratio: {HEADER}\n               {format_spread(overall['ratio'])}")
    share = f"{100 * r['share']:.1f}%" if r["share"] is not None else "-"
    print(f"Ranking: {r['hits']} of {r['ranked']} ops with two or more simulated rows ({share}) have the cost "
          f"model's best within 5% of the simulated best ({r['ops']} ops simulated)")
    if figures["misses"]:
        print("\nRanking misses (the cost model's best row, simulated, against the simulated best):")
        for o in figures["misses"]:
            k = o["ranking"]
            rows = {row["row"]: row for row in o["rows"]}
            a, b = rows[k["model_best"]], rows[k["simulated_best"]]
            print(f"  {o['machine']:16} {o['workload']:18} {o['op']:24} {k['behind']:6.2f}x behind: "
                  f"{a['row']} est {a['estimate']} sim {a['simulated']} | "
                  f"{b['row']} est {b['estimate']} sim {b['simulated']}")
    # A machine that cannot map a workload (no such dtype on its array, too little SRAM) is not a failure of the
    # cost model; anything else is a fault worth a look.
    for machine, workload, why in sorted(failures):
        first = why.splitlines()[0]
        first = first[first.find("error: ") + 7:] if "error: " in first else first
        print(f"not measured: {machine} {workload}: {first[:160]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", action="append", help="a shipped machine (configs/arch/NAME.yaml); repeatable")
    parser.add_argument("--workload", action="append", help="a shipped workload; repeatable")
    parser.add_argument("--skip-slow", action="store_true", help="leave out " + ", ".join(sorted(SLOW)))
    parser.add_argument("--jobs", type=int, default=2, help="tessera processes at once")
    parser.add_argument("--threads", type=int, default=1, help="--threads of each tessera process")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take")
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "tessera"))
    parser.add_argument("--save", help="keep each report.json here")
    parser.add_argument("--load", help="read reports saved by --save instead of running")
    parser.add_argument("--per-op", action="store_true", help="print each op's rows")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    machines = args.arch or shipped("arch")
    workloads = args.workload or [w for w in shipped("workloads") if not (args.skip_slow and w in SLOW)]
    reports, failures = [], []
    if args.load:
        for machine in machines:
            for workload in workloads:
                path = os.path.join(args.load, f"{machine}--{workload}.json")
                if os.path.exists(path):
                    with open(path) as f:
                        reports.append((machine, workload, json.load(f)))
    else:
        if args.save:
            os.makedirs(args.save, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(run_one, args.binary, m, w, args.threads, args.timeout, args.save)
                       for m in machines for w in workloads]
            for future in concurrent.futures.as_completed(futures):
                machine, workload, report, why, seconds = future.result()
                status = "done" if why is None else why.splitlines()[0][:100]
                print(f"{machine} {workload}: {status} ({seconds:.1f} s)", file=sys.stderr)
                if report is None:
                    failures.append((machine, workload, why))
                else:
                    reports.append((machine, workload, report))
    reports.sort(key=lambda t: (t[0], t[1]))
    figures = analyse(reports)
    if args.json:
        figures["not_measured"] = [{"machine": m, "workload": w, "why": why} for m, w, why in failures]
        json.dump(figures, sys.stdout, indent=1)
        print()
    else:
        print_table(figures, args.per_op, failures)


if __name__ == "__main__":
    main()
