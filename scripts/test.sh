#!/usr/bin/env bash
# README step 2 (and what CI runs): install what is missing, build everything, run the whole test suite.
# Every TEST is its own process (SystemC elaborates one model per process), run in parallel.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
cd "$root/build"
ctest -j "$(nproc)" --output-on-failure --timeout 600
