#!/usr/bin/env bash
# The performance benchmark (README, "Performance"): builds in Release and prints host seconds and rates for
# 1024^3, 2048^3 and 4096^3 bf16 GEMMs on configs/arch/mesh4x4.yaml, timing-only and with numerics, and the
# mapper's evaluations per second. TESSERA_BENCH_SKIP_NUMERICS=1 skips the functional runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" --target tessera_bench >/dev/null
exec "$root/build/tests/tessera_bench" "$@"
