#!/usr/bin/env bash
# The plot scripts on a real sweep (ctest scripts.plots): tiny-gemm run by the tessera binary given, then
# scripts/plot_sweep.py and scripts/plot_report.py --layers. Every PNG is written and is a PNG, no op is above
# its machine's roof (plot_sweep.py says so on stderr: a simulator beating its roofs is a bug), every op is
# on the roofline, and a bad --map axis is refused with its message.
set -euo pipefail
tessera=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"$tessera" sweep "$root/configs/sweeps/tiny-gemm.yaml" --out "$work/s" --jobs 2 --quiet >/dev/null
/usr/bin/python3 "$root/scripts/plot_sweep.py" "$work/s" --sweep "$root/configs/sweeps/tiny-gemm.yaml" \
  -o "$work/p" >"$work/out" 2>"$work/err" || fail "plot_sweep.py exited $?: $(cat "$work/err")"
for name in metric-cycles metric-energy metric-edp winner-map roofline bubbles; do
  grep -qx "$work/p/$name.png" "$work/out" || fail "$name.png not listed: $(cat "$work/out")"
  magic=$(head -c 8 "$work/p/$name.png" | od -An -tx1 | tr -d ' \n')
  [[ $magic == 89504e470d0a1a0a ]] || fail "$name.png is not a PNG"
done
grep -q "^roofline: 8 ops under 4 machines' roofs, the closest " "$work/err" || fail "roofline: $(cat "$work/err")"
if grep -q "above its roof" "$work/err"; then fail "$(cat "$work/err")"; fi

status=0
/usr/bin/python3 "$root/scripts/plot_sweep.py" "$work/s" --map core.sram.kib nope -o "$work/p" >/dev/null \
  2>"$work/err" || status=$?
[[ $status -eq 1 ]] || fail "--map nope exited $status"
axes="core.pe_array.rows, core.pe_array.cols, dram.bandwidth_gbps, core.sram.kib"
expected="--map nope: not an axis of this sweep ($axes)"
[[ $(tail -1 "$work/err") == "$expected" ]] || fail "--map nope said: $(cat "$work/err")"

point=$(ls "$work/s/points" | head -1)
/usr/bin/python3 "$root/scripts/plot_report.py" "$work/s/points/$point/gemm-256" --layers -o "$work/layers.png" \
  >/dev/null || fail "plot_report.py --layers exited $?"
[[ $(head -c 4 "$work/layers.png" | od -An -tx1 | tr -d ' \n') == 89504e47 ]] || fail "layers.png is not a PNG"
echo "plots: 7 PNGs, every op under its roof"
