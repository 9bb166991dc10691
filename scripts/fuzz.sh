#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS (issue "Hardening"): scripts/fuzz.sh config_fuzz|program_fuzz SECONDS.
# Builds build-fuzz/ with clang, the whole library under -fsanitize=fuzzer-no-link,address,undefined (never
# the default build), seeds the corpus once from the shipped configs (config_fuzz) or from `tessera map --out`
# programs (made by $TESSERA, default build/tessera) and tests/bad-inputs/programs (program_fuzz), and keeps it
# in build-fuzz/corpus/TARGET. Findings are written to build-fuzz/findings/; each one becomes a file of
# tests/bad-inputs/ once fixed.
set -euo pipefail
target=${1:?usage: scripts/fuzz.sh config_fuzz|program_fuzz SECONDS}
seconds=${2:?usage: scripts/fuzz.sh config_fuzz|program_fuzz SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$flags" -DTESSERA_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF \
    -DTESSERA_BUILD_CUDA=OFF -DTESSERA_NATIVE=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
fi
cmake --build "$build" -j2 --target "$target"
corpus="$build/corpus/$target"
if [[ ! -d "$corpus" ]]; then
  mkdir -p "$corpus"
  if [[ $target == config_fuzz ]]; then
    for folder in configs/arch configs/workloads tests/bad-inputs/machines tests/bad-inputs/workloads; do
      for file in "$root/$folder"/*.yaml; do cp "$file" "$corpus/${folder//\//.}.$(basename "$file")"; done
    done
  else
    cp "$root"/tests/bad-inputs/programs/*.tprog "$corpus"/
    for workload in gemm-256 default bert-base-attn transformer-vector; do
      out=$(mktemp -d)
      "${TESSERA:-$root/build/tessera}" map --workload "$root/configs/workloads/$workload.yaml" --out "$out/o" --quiet >/dev/null
      for program in "$out"/o/*.tprog; do cp "$program" "$corpus/$workload.$(basename "$program")"; done
      rm -rf "$out"
    done
  fi
fi
mkdir -p "$build/findings"
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
export ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-}
"$build/tests/fuzz/$target" "$corpus" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=65536 \
  -artifact_prefix="$build/findings/$target-" -print_final_stats=1
