#!/usr/bin/env bash
# The large and hostile inputs of issue "hardening 2", made in a scratch folder and given to the built tessera:
# prints each one's exit code, wall seconds and peak resident set (GNU time). Figures, not a pass/fail test:
# docs/hardening.md records them. Usage: scripts/hardening-bench.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tessera="${1:-$root/build}/tessera"
[[ -x /usr/bin/time ]] || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$root"
python3 - "$scratch" <<'PY'
import sys
d = sys.argv[1]
gemm = lambda i: f"  - {{name: g{i}, kind: gemm, m: 16, n: 16, k: 16, dtype: bf16}}\n"
head = "name: big\nseed: 1\nops:\n"
open(f"{d}/ops-100000.yaml", "w").write(head + "".join(gemm(i) for i in range(100000)))
open(f"{d}/ops-10000.yaml", "w").write(head + "".join(gemm(i) for i in range(10000)))
open(f"{d}/scalars.yaml", "w").write(head + gemm(0) + "x: [" + "1," * 7_000_000 + "1]\n")
open(f"{d}/long-scalar.yaml", "w").write("name: " + "a" * 15_000_000 + "\nseed: 1\nops: []\n")
attn = "  - {{name: a, kind: attention, batch: {b}, heads: {h}, kv_heads: {h}, seq_q: 16, seq_kv: 16, head_dim: 64, dtype: bf16}}\n"
open(f"{d}/heads-1e6.yaml", "w").write(head + attn.format(b=1, h=1000000))
open(f"{d}/heads-131072.yaml", "w").write(head + attn.format(b=128, h=1024))
values = lambda n, base: "[" + ", ".join(str(base + i) for i in range(n)) + "]"
open(f"{d}/sweep-100000.yaml", "w").write(
    f"name: big\narch: configs/arch/default.yaml\nworkloads: [configs/workloads/gemm-256.yaml]\ngrid:\n"
    f"  core.sram.kib: {values(100, 256)}\n  dram.bandwidth_gbps: {values(100, 100)}\n"
    f"  core.pe_array.rows: {values(10, 8)}\ntiming_only: true\n")
PY
measure() {
  local label=$1; shift
  local rc=0
  /usr/bin/time -f "%e %M" -o "$scratch/time" "$@" >/dev/null 2>"$scratch/err" || rc=$?
  read -r seconds kib < <(tail -1 "$scratch/time")
  printf '%-46s exit %d  %6.2f s  %6d MB\n' "$label" "$rc" "$seconds" $((kib / 1024))
}
measure "validate: 100,000 gemm ops (6.5 MB)" "$tessera" validate "$scratch/ops-100000.yaml"
measure "validate: 10,000 gemm ops" "$tessera" validate "$scratch/ops-10000.yaml"
measure "run --timing-only: 10,000 gemm ops" "$tessera" run --workload "$scratch/ops-10000.yaml" --timing-only --quiet
measure "validate: 7 million scalars in a list (14 MB)" "$tessera" validate "$scratch/scalars.yaml"
measure "validate: a 15 MB scalar" "$tessera" validate "$scratch/long-scalar.yaml"
measure "validate: attention, 10^6 heads" "$tessera" validate "$scratch/heads-1e6.yaml"
measure "run --timing-only: attention, 131,072 pairs" "$tessera" run --workload "$scratch/heads-131072.yaml" --timing-only --quiet
measure "sweep --check: 100,000 points" "$tessera" sweep --check "$scratch/sweep-100000.yaml" --quiet
