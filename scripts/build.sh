#!/usr/bin/env bash
# Configures and builds tessera into build/ (Release). Extra arguments go to the build tool (e.g. a target).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc)" "$@"
