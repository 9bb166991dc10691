// Where the host time of one op's candidates goes (not a test: it prints figures and asserts nothing). For op
// N of a workload on a machine it searches as `tessera run` does (one candidate kept per dataflow row) and,
// for each row's best, prints the tile instructions and the host seconds of the three steps a candidate
// costs: the lowering (mapper::lower), the program check (arch::check_program) and the timing-only simulation
// (Machine::run, which checks again: its check is taken out of its time), with the simulation's microseconds
// per instruction. One thread; the MoE layers' host time (docs/performance.md, "MoE layers") is read with it:
//
//   build/tests/tessera_op_bench configs/arch/mesh4x4.yaml configs/workloads/deepseek-v3-moe.yaml [OP [ROWS]]
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <systemc>

#include "arch/isa/program_check.hpp"
#include "arch/spec.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "mapper/lowering.hpp"
#include "mapper/search.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"
#include "tests/bench/seconds.hpp"

namespace {

using tessera::bench::Clock;
using tessera::bench::seconds_since;

int run(int argc, char** argv) {
  using namespace tessera;
  if (argc < 3) {
    fmt::print(stderr, "usage: {} ARCH.yaml WORKLOAD.yaml [OP_INDEX [ROWS]]\n", argv[0]);
    return 2;
  }
  const arch::ArchSpec spec = arch::arch_from_yaml(config::load_file(argv[1]));
  const ops::Workload workload = ops::workload_from_yaml(config::load_file(argv[2]));
  const size_t index = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 0;
  const size_t rows = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : SIZE_MAX;
  if (index >= workload.ops.size()) {
    fmt::print(stderr, "the workload has {} ops\n", workload.ops.size());
    return 2;
  }
  const ops::Op& op = workload.ops[index];
  sim::Machine machine(spec);
  mapper::SearchOptions options;
  options.dataflows = spec.core.pe_array.dataflows;  // --dataflow all, the default
  options.keep_per_dataflow = 1;
  options.threads = 1;
  options.seed = workload.seed;
  const auto search_start = Clock::now();
  const mapper::SearchResult search = mapper::search_op(op, spec, options);
  fmt::print("{} ({} {}) on {}: {} mappings scored in {:.2f} s, one thread\n", op.name, op.kind_name(),
             op.shape_text(), spec.name, search.evaluated, seconds_since(search_start));
  fmt::print("  {:<48} {:>12} {:>8} {:>8} {:>9} {:>9} {:>13}\n", "row's best", "instructions", "lower_s",
             "check_s", "timing_s", "us/instr", "sim_cycles");
  size_t shown = 0;
  for (const mapper::DataflowSearch& row : search.per_dataflow) {
    if (shown++ >= rows || row.best.empty()) continue;
    const mapper::Mapping& mapping = row.best.front().mapping;
    auto start = Clock::now();
    const arch::Program program = mapper::lower(op, workload.seed, mapping, spec, "bench");
    const double lower_seconds = seconds_since(start);
    start = Clock::now();
    arch::check_program(program, spec);
    const double check_seconds = seconds_since(start);
    start = Clock::now();
    const sim::RunResult result = machine.run(program, sim::RunOptions{false, false});
    const double timing_seconds = std::max(0.0, seconds_since(start) - check_seconds);
    std::string label = mapping.describe();
    if (label.size() > 48) label = label.substr(0, 45) + "...";
    fmt::print("  {:<48} {:>12} {:>8.2f} {:>8.2f} {:>9.2f} {:>9.2f} {:>13}\n", label,
               result.counters.instructions, lower_seconds, check_seconds, timing_seconds,
               1e6 * timing_seconds / result.counters.instructions, result.counters.cycles);
  }
  return 0;
}

}  // namespace

extern "C" int sc_main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr, "{}\n", error.what());
    return 2;
  }
}

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
