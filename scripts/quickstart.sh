#!/usr/bin/env bash
# README step 1: install what is missing, build, and run the shipped default machine and workload.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" --target tessera
"$root/build/tessera" run "$@"
