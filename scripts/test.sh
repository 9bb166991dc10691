#!/usr/bin/env bash
# README step 2 (and what CI runs): install what is missing, build everything, run the whole test suite.
# Every TEST is its own process (SystemC elaborates one model per process), run in parallel. Then the cluster
# path of `tessera sweep` on a real one-node Slurm (scripts/slurm-test.sh: installs slurm-wlm and munge), then
# the whole suite again under ASan + UBSan (scripts/test-sanitized.sh: its own build-asan/ tree).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
cd "$root/build"
# DeepSeek-V3's timing-only report (ShippedReports.*) takes about 5 minutes alone on 2 cores: 20 minutes leave it room
# beside another test.
ctest -j "$(nproc)" --output-on-failure --timeout 1200
echo "== sweep on a real Slurm: scripts/slurm-test.sh =="
"$root/scripts/slurm-test.sh"
echo "== the whole suite under ASan + UBSan: scripts/test-sanitized.sh =="
"$root/scripts/test-sanitized.sh"
