// tessera's performance benchmark (not a test: it prints figures and asserts nothing). For bf16 GEMMs of
// 1024^3, 2048^3 and 4096^3 on configs/arch/mesh4x4.yaml it reports, per phase, host seconds and rates:
// the mapper's analytical evaluations per second (one thread), lowering, and simulation timing-only and with
// numerics (simulated instructions per second). Run it with scripts/bench.sh; README.md records the figures.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <systemc>

#include "arch/isa/program_binary.hpp"
#include "arch/isa/program_text.hpp"
#include "arch/spec.hpp"
#include "common/config.hpp"
#include "mapper/contraction/gemm_stage.hpp"
#include "mapper/contraction/search.hpp"
#include "mapper/lowering.hpp"
#include "ops/kinds/gemm.hpp"
#include "ops/reference.hpp"
#include "sim/machine.hpp"
#include "tests/bench/seconds.hpp"

namespace {

using tessera::bench::Clock;
using tessera::bench::seconds_since;

int run(int argc, char** argv) {
  using namespace tessera;
  const std::string arch_path =
      argc > 1 ? argv[1] : std::string(TESSERA_SOURCE_DIR) + "/configs/arch/mesh4x4.yaml";
  const bool with_numerics = std::getenv("TESSERA_BENCH_SKIP_NUMERICS") == nullptr;
  const arch::ArchSpec spec = arch::arch_from_yaml(config::load_file(arch_path));
  sim::Machine machine(spec);
  fmt::print("tessera benchmark on {} ({}x{} cores of {}x{} PEs), bf16 GEMMs, one thread\n", spec.name,
             spec.mesh.rows, spec.mesh.cols, spec.core.pe_array.rows, spec.core.pe_array.cols);
  fmt::print("{:>6} {:>10} {:>12} {:>9} {:>12} {:>11} {:>13} {:>12} {:>13} {:>14}\n", "size", "mappings",
             "evals/s", "lower_s", "instructions", "timing_s", "instr/s", "numerics_s", "sim_cycles",
             "macs/host_s");
  for (int64_t size : {1024, 2048, 4096}) {
    const ops::Op op = ops::make_op("bench", DType::bf16, ops::GemmShape{size, size, size});
    const auto stage =
        std::make_shared<mapper::GemmStage>(mapper::GemmProblem{size, size, size, DType::bf16});
    mapper::SearchOptions options;
    options.dataflows = {arch::Dataflow::ws};
    options.keep_per_dataflow = 1;
    options.threads = 1;
    const auto search_start = Clock::now();
    const mapper::SearchResult search = mapper::search_stage(stage, spec, options);
    const double search_seconds = seconds_since(search_start);
    const mapper::Mapping& mapping = search.per_dataflow.front().best.front().mapping;

    const auto lower_start = Clock::now();
    const arch::Program program = mapper::lower(op, 1, mapping, spec, "bench");
    const double lower_seconds = seconds_since(lower_start);

    const auto timing_start = Clock::now();
    const sim::RunResult timing = machine.run(program, sim::RunOptions{false, false});
    const double timing_seconds = seconds_since(timing_start);

    double numerics_seconds = 0;
    if (with_numerics) {
      const auto numerics_start = Clock::now();
      const sim::RunResult functional = machine.run(program, sim::RunOptions{true, false});
      numerics_seconds = seconds_since(numerics_start);
      if (functional.counters.cycles != timing.counters.cycles)
        fmt::print("  (functional and timing-only cycles differ!)\n");
    }
    fmt::print("{:>6} {:>10} {:>12.3g} {:>9.3f} {:>12} {:>11.3f} {:>13.3g} {:>12.3f} {:>13} {:>14.3g}\n",
               size, search.evaluated, search.evaluated / search_seconds, lower_seconds,
               timing.counters.instructions, timing_seconds, timing.counters.instructions / timing_seconds,
               numerics_seconds, timing.counters.cycles, static_cast<double>(op.macs()) / timing_seconds);
    fmt::print("       mapping: {}\n", mapping.describe());
    if (size != 4096) continue;
    // What a program costs to send to a worker process (sim/parallel_runs.cpp): its binary form written here,
    // read back there; and its text, which workers were sent before. The best of three rounds: the first
    // pays for faulting in fresh pages (~14 MB of bytes, ~40 MB of program), which a worker's next program
    // reuses.
    double binary_write_seconds = 1e9, binary_read_seconds = 1e9, write_seconds = 1e9, read_seconds = 1e9;
    std::string bytes, text;
    bool binary_same = true, text_same = true;
    for (int round = 0; round < 3; ++round) {
      const auto binary_write_start = Clock::now();
      bytes = arch::write_program_binary(program);
      binary_write_seconds = std::min(binary_write_seconds, seconds_since(binary_write_start));
      const auto binary_read_start = Clock::now();
      arch::Program read_back = arch::read_program_binary(bytes);
      binary_read_seconds = std::min(binary_read_seconds, seconds_since(binary_read_start));
      binary_same = binary_same && read_back == program;
      const auto write_start = Clock::now();
      text = arch::write_program(program);
      write_seconds = std::min(write_seconds, seconds_since(write_start));
      read_back = arch::Program{};
      const auto read_start = Clock::now();
      read_back = arch::read_program(text, "bench");
      read_seconds = std::min(read_seconds, seconds_since(read_start));
      text_same = text_same && read_back == program;
    }
    fmt::print(
        "  program for a worker, us per instruction written / read (bytes each): binary {:.3f} / {:.3f} "
        "({}){}, "
        "text {:.2f} / {:.2f} ({}){}\n",
        1e6 * binary_write_seconds / timing.counters.instructions,
        1e6 * binary_read_seconds / timing.counters.instructions, bytes.size() / timing.counters.instructions,
        binary_same ? "" : " (read back differs!)", 1e6 * write_seconds / timing.counters.instructions,
        1e6 * read_seconds / timing.counters.instructions, text.size() / timing.counters.instructions,
        text_same ? "" : " (read back differs!)");
    // Same MACs, other tile sizes: host time follows the instructions and bursts, not the arithmetic.
    fmt::print("  4096^3 timing-only with other tiles of the same split (same MACs):\n");
    fmt::print("  {:>16} {:>12} {:>10} {:>10} {:>12}\n", "tile", "instructions", "bursts", "timing_s",
               "sim_cycles");
    for (int64_t tile_k : {64, 128, 256}) {
      mapper::Mapping variant = mapping;
      variant.tile_k = tile_k;
      const arch::Program program_variant = mapper::lower(op, 1, variant, spec, "bench");
      const auto start = Clock::now();
      const sim::RunResult result = machine.run(program_variant, sim::RunOptions{false, false});
      const double seconds = seconds_since(start);
      int64_t bursts = 0;
      for (const sim::UnitResult& unit : result.units) bursts += unit.counters.bursts;
      fmt::print("  {:>16} {:>12} {:>10} {:>10.3f} {:>12}\n",
                 fmt::format("{}x{}x{}", variant.tile_m, variant.tile_n, tile_k),
                 result.counters.instructions, bursts, seconds, result.counters.cycles);
    }
  }
  return 0;
}

}  // namespace

extern "C" int sc_main(int argc, char** argv) {
  return run(argc, argv);
}

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
