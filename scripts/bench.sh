#!/usr/bin/env bash
# The performance benchmark (docs/performance.md): builds in Release and prints host seconds and rates for
# 1024^3, 2048^3 and 4096^3 bf16 GEMMs on configs/arch/mesh4x4.yaml, timing-only and with numerics, and the
# mapper's evaluations per second; then the whole networks (mapper search plus timing-only simulation of every
# layer, --threads 2). TESSERA_BENCH_SKIP_NUMERICS=1 skips the functional runs; TESSERA_BENCH_SKIP_NETWORKS=1
# the networks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" --target tessera_bench --target tessera >/dev/null
"$root/build/tests/tessera_bench" "$@"
if [[ "${TESSERA_BENCH_SKIP_NETWORKS:-0}" != 1 ]]; then
  echo
  printf '  %-14s %8s %12s %10s\n' network layers sim_cycles host_s
  report=$(mktemp)
  trap 'rm -f "$report"' EXIT
  for net in resnet50 mobilenet-v2 alexnet vgg16; do
    start=$(date +%s%N)
    "$root/build/tessera" run --arch "$root/configs/arch/mesh4x4.yaml" \
      --workload "$root/configs/workloads/$net.yaml" --timing-only --threads 2 --quiet --format json >"$report"
    end=$(date +%s%N)
    /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("  %-14s %8d %12d %10.2f" % (sys.argv[2], len(r["ops"]), r["totals"]["cycles"], float(sys.argv[3])))' \
      "$report" "$net" "$(((end - start) / 1000000))e-3"
  done
fi
