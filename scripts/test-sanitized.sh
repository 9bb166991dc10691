#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (issue "Hardening"; scripts/test.sh,
# and so CI, runs it after the normal suite). Builds build-asan/ (-DTESSERA_SANITIZE=ON, -O1 -g1: optimised enough that the
# SystemC runs stay quick, line tables for the reports) and runs ctest with options that make any report fail
# its test: ASan and UBSan halt on the first error, LeakSanitizer runs at exit with the suppressions of
# tests/sanitizers/lsan.supp (each entry says why). Extra arguments go to ctest (e.g. -R Gemm).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-asan"
jobs=${TESSERA_JOBS:-$(nproc)}
"$root/scripts/setup.sh"
start=$(date +%s)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_CUDA=OFF >/dev/null
cmake --build "$build" -j "$jobs"
built=$(date +%s)
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
cd "$build"
# Left out, as the slowest end-to-end tests whose code the rest of the suite runs under the sanitizers too: the
# text round trip of every shipped workload's programs on every shipped machine (minutes of lowering; the CLI
# round trip of ProgramRoundTrip.* covers the same readers and checks on small ops), and every shipped
# workload's report against the schema (minutes of mapping MoE layers; ReportSchema.* checks a small run's).
slow='^EveryShippedMachine/ShippedPrograms\.|^Every/ShippedReports\.'
ctest -j "$jobs" --output-on-failure --timeout 1200 -E "$slow" "$@"
echo "sanitized suite: build $((built - start)) s, tests $(($(date +%s) - built)) s"
