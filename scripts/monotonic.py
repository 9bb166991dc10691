#!/usr/bin/python3
"""What-ifs that move the way physics says (issue "What-if answers you can trust"): for each workload x machine
x resource (DRAM bandwidth, NoC link width, SRAM capacity, DMA engines, vector lanes), runs `tessera run
--timing-only` on the machine as shipped, with the resource doubled and with it halved, and checks that doubling
never makes the workload slower by more than the tolerance and halving never makes it faster by more than it
(the winner may change; its cycles may not go the wrong way). A halved or doubled machine the reader refuses
(an SRAM too small for any mapping, a vector unit narrower than its special-function pipe) is skipped and said.

usage: scripts/monotonic.py [--binary B] [--arch NAME ...] [--workload NAME ...] [--resource NAME ...]
                            [--tolerance 0.005] [--jobs N] [--json FILE]

Exit 0 when every comparison holds, 1 when one does not (each listed), 2 on a usage error. CI runs it on the
small workloads (tests/scripts/monotonic_test.sh); `scripts/monotonic.py` alone runs every shipped workload
on every shipped machine (the figures docs/performance.md quotes).
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each resource: the --set path and the machine field's value read from the resolved machine.
RESOURCES = {
    "dram": ("dram.bandwidth_gbps", lambda m: m["dram"]["bandwidth_gbps"]),
    "noc": ("noc.link_bytes_per_cycle", lambda m: m["noc"]["link_bytes_per_cycle"]),
    "sram": ("core.sram.kib", lambda m: m["core"]["sram"]["kib"]),
    "dma": ("core.dma.engines", lambda m: m["core"]["dma"]["engines"]),
    "lanes": ("core.vector.lanes", lambda m: m["core"]["vector"]["lanes"]),
}
# Too slow for a sweep of 11 runs each (minutes per run): left out unless named.
SLOW = {"gemm-8192", "deepseek-v3-moe", "mixtral-8x7b-moe"}


def names(folder):
    return sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "configs", folder)) if f.endswith(".yaml"))


def resolved_machine(binary, arch):
    """The machine with every default filled in (tessera map --out writes arch.resolved.yaml), as JSON."""
    with tempfile.TemporaryDirectory() as out:
        folder = os.path.join(out, "o")
        subprocess.run([binary, "map", "--arch", arch, "--workload",
                        os.path.join(ROOT, "configs", "workloads", "gemm-256.yaml"), "--out", folder, "--quiet"],
                       check=True, capture_output=True)
        import yaml  # Debian's python3-yaml
        with open(os.path.join(folder, "arch.resolved.yaml")) as f:
            return yaml.safe_load(f)


def run(binary, arch, workload, sets):
    command = [binary, "run", "--arch", arch, "--workload", workload, "--timing-only", "--quiet", "--format",
               "json", "--threads", "1"]
    for s in sets:
        command += ["--set", s]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode == 2:
        return None, done.stderr.strip().splitlines()[0] if done.stderr.strip() else "refused"
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr[-400:]}")
    return json.loads(done.stdout)["totals"]["cycles"], None


def scaled(value, factor):
    v = value * factor
    return int(v) if isinstance(value, int) and float(v).is_integer() else v


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "tessera"))
    parser.add_argument("--arch", action="append")
    parser.add_argument("--workload", action="append")
    parser.add_argument("--resource", action="append", choices=sorted(RESOURCES))
    parser.add_argument("--tolerance", type=float, default=0.005)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="write every comparison here")
    args = parser.parse_args()
    archs = args.arch or names("arch")
    workloads = args.workload or [w for w in names("workloads") if w not in SLOW]
    resources = args.resource or sorted(RESOURCES)

    jobs = []  # (arch, workload, resource, factor, sets)
    for arch in archs:
        arch_path = os.path.join(ROOT, "configs", "arch", arch + ".yaml")
        machine = resolved_machine(args.binary, arch_path)
        for workload in workloads:
            for resource in resources:
                path, value_of = RESOURCES[resource]
                value = value_of(machine)
                for factor in (1, 2, 0.5):
                    sets = [] if factor == 1 else [f"{path}={scaled(value, factor)}"]
                    jobs.append((arch, workload, resource, factor, sets))
    # The shipped machine's run is the same for every resource: run it once.
    unique = {}
    for arch, workload, resource, factor, sets in jobs:
        unique.setdefault((arch, workload, tuple(sets)), None)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {key: pool.submit(run, args.binary, os.path.join(ROOT, "configs", "arch", key[0] + ".yaml"),
                                    os.path.join(ROOT, "configs", "workloads", key[1] + ".yaml"), list(key[2]))
                   for key in unique}
        for key, future in futures.items():
            unique[key] = future.result()

    results, failures, skipped = [], [], []
    for arch in archs:
        for workload in workloads:
            base, base_note = unique[(arch, workload, ())]
            if base is None:
                skipped.append(f"{arch} {workload}: {base_note}")
                continue
            for resource in resources:
                for factor in (2, 0.5):
                    sets = next(j[4] for j in jobs if j[:4] == (arch, workload, resource, factor))
                    cycles, note = unique[(arch, workload, tuple(sets))]
                    if cycles is None:
                        skipped.append(f"{arch} {workload} {sets[0]}: {note}")
                        continue
                    ratio = cycles / base
                    wrong = ratio > 1 + args.tolerance if factor == 2 else ratio < 1 - args.tolerance
                    entry = {"arch": arch, "workload": workload, "resource": resource, "factor": factor,
                             "set": sets[0], "base_cycles": base, "cycles": cycles, "ratio": ratio, "holds": not wrong}
                    results.append(entry)
                    if wrong:
                        failures.append(entry)
    print(f"{len(results)} comparisons over {len(archs)} machines x {len(workloads)} workloads x "
          f"{len(resources)} resources (x2 and x0.5), tolerance {100 * args.tolerance:.1f}%: "
          f"{len(results) - len(failures)} hold, {len(failures)} go the wrong way, {len(skipped)} skipped")
    for f in failures:
        way = "slower" if f["factor"] == 2 else "faster"
        print(f"  WRONG WAY {f['arch']} {f['workload']} {f['set']}: {f['cycles']:,} cycles vs {f['base_cycles']:,} "
              f"as shipped ({f['ratio']:.4f}x: {way})")
    for s in skipped:
        print(f"  skipped {s}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "skipped": skipped}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
