// The DMA engines on row-gather views and fill=values inputs (docs/tile-program.md, "Views", "Lists"):
// hand-written programs run functionally move exactly the listed rows (out of order, repeated, zero rows, a
// gather of an output the program wrote), and a load of a view region is charged its runs: consecutive whole
// rows one run, anything else a run per row, zeros nothing. Each TEST is its own process (one elaboration).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "arch/isa/program_text.hpp"
#include "arch/isa/views.hpp"
#include "common/config.hpp"
#include "ops/tensor.hpp"
#include "sim/machine.hpp"

namespace tessera::sim {
namespace {

// One core, two DMA engines of 64 B/cycle, 256-byte bursts and DRAM interleave (the defaults): a 16-column
// fp32 row is 64 bytes, four consecutive rows one burst.
arch::ArchSpec machine_spec() {
  const std::string text =
      "name: m\nclock_ghz: 1.0\nmesh: {rows: 1, cols: 1}\nnoc: {link_bytes_per_cycle: 64}\n"
      "dram: {bandwidth_gbps: 256, channels: 4, latency_cycles: 100}\ncore:\n  pe_array: {rows: 8, cols: 8}\n"
      "  sram: {kib: 64, banks: 4, bank_width_bytes: 32}\n  dma: {engines: 2, bytes_per_cycle: 64, "
      "setup_cycles: 16}\n";
  return arch::arch_from_yaml(config::load_text(text, "m.yaml"));
}

const std::string kHeader = "tessera-program 1\nname gather\nmesh 1x1\n";

// X as the machine fills it: the generator's values for seed 3, id 0.
ops::HostTensor source_x(int64_t rows) {
  return ops::generate_input(DType::fp32, rows, 16, 3, 0);
}

// Whether `out` row r holds columns [col, col + cols) of X row rows[first + r] (zeros for -1), bit for bit.
bool holds_gathered_rows(const ops::HostTensor& out, const ops::HostTensor& x,
                         const std::vector<int64_t>& rows, int64_t first, int64_t col, int64_t cols,
                         std::string* detail) {
  for (int64_t r = 0; r < out.rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t source = rows[static_cast<size_t>(first + r)];
      const double expected = source < 0 ? 0.0 : x.value(source * x.cols + col + c);
      const double actual = out.value(r * out.cols + c);
      if (actual != expected) {
        *detail = fmt::format("row {} column {}: {} where {} is expected", r, c, actual, expected);
        return false;
      }
    }
  return true;
}

// The bursts that DMA engine `engine` of core 0 issued in `result`.
int64_t bursts_of(const RunResult& result, int engine) {
  for (const UnitResult& unit : result.units)
    if (unit.core == 0 && unit.queue == arch::QueueId{arch::QueueKind::dma, engine})
      return unit.counters.bursts;
  ADD_FAILURE() << "no dma" << engine;
  return -1;
}

// Loads view region G[0:8, 0:16] and G[2:6, 4:12] of a gather of X by `list`, stores them to O and P.
std::string gather_program(const std::string& list) {
  return kHeader +
         "tensor X fp32 10x16 at 0x0 input seed=3 id=0\n"
         "tensor O fp32 8x16 at 0x1000 output\n"
         "tensor P fp32 4x8 at 0x2000 output\n"
         "tensor G fp32 8x16 view gather X rows=" +
         list +
         "\n"
         "core 0,0\n"
         "  dma0 load G[0:8, 0:16] -> 0x0 ; signal in\n"
         "  dma1 store 0x0 -> O[0:8, 0:16] ; wait in\n"
         "  dma0 load G[2:6, 4:12] -> 0x1000 ; signal part\n"
         "  dma1 store 0x1000 -> P[0:4, 0:8] ; wait part\n";
}

}  // namespace

TEST(RowGatherDma, ALoadGathersTheListedRowsOutOfOrderRepeatedAndZero) {
  Machine machine(machine_spec());
  const std::vector<int64_t> rows = {3, 0, 1, 2, -1, 5, 5, 9};
  const RunResult result =
      machine.run(arch::read_program(gather_program("3,0-2,-1,5*2,9"), "g.tprog"), RunOptions{});
  const ops::HostTensor x = source_x(10);
  std::string detail;
  EXPECT_TRUE(holds_gathered_rows(result.outputs.at(1), x, rows, 0, 0, 16, &detail)) << detail;
  EXPECT_TRUE(holds_gathered_rows(result.outputs.at(2), x, rows, 2, 4, 8, &detail)) << detail;
  // Only non-zero rows come from DRAM: 7 whole rows, then 3 of the 4 part rows' 8 columns; the stores write
  // O and P whole.
  EXPECT_EQ(result.counters.dram_read_bytes, (7 * 16 + 3 * 8) * 4);
  EXPECT_EQ(result.counters.dram_write_bytes, (8 * 16 + 4 * 8) * 4);

  // The same program with every listed row one lower (a permutation off by one) moves other rows: the
  // comparison must catch it.
  const RunResult shifted =
      machine.run(arch::read_program(gather_program("2,-1,0,1,-1,4*2,8"), "g.tprog"), RunOptions{});
  EXPECT_FALSE(holds_gathered_rows(shifted.outputs.at(1), x, rows, 0, 0, 16, &detail));
  EXPECT_FALSE(holds_gathered_rows(shifted.outputs.at(2), x, rows, 2, 4, 8, &detail));
}

// A region of whole rows is cut into runs of consecutive source rows, each into bursts; a region of part of
// each row into a run per row; zero rows into nothing. The counts are arch::row_gather_traffic's.
TEST(RowGatherDma, AWholeRowRegionOfConsecutiveRowsIsOneRun) {
  Machine machine(machine_spec());
  const std::string tensors =
      "tensor X fp32 10x16 at 0x0 input seed=3 id=0\n"
      "tensor G fp32 9x16 view gather X rows=0-3,7,-1,-1,5,9\n";
  const auto run = [&](const std::string& load) {
    return machine.run(arch::read_program(kHeader + tensors + "core 0,0\n  dma0 " + load + "\n", "g.tprog"),
                       RunOptions{false, false});
  };
  const arch::RowGatherView view{0, {0, 1, 2, 3, 7, -1, -1, 5, 9}};

  // Rows 0-3 are 256 contiguous bytes (one burst), 7, 5 and 9 one 64-byte burst each, the zeros none.
  const RunResult whole = run("load G[0:9, 0:16] -> 0x0");
  EXPECT_EQ(bursts_of(whole, 0), 4);
  EXPECT_EQ(arch::row_gather_traffic(view, 16, 0, 9, 0, 16).runs, 4);
  EXPECT_EQ(whole.counters.dram_read_bytes, 7 * 64);
  EXPECT_EQ(whole.counters.sram_write_bytes, 9 * 64);  // the zero rows land in SRAM too

  // Columns 0..7 of rows 0-3: four 32-byte runs, though the rows are consecutive.
  const RunResult part = run("load G[0:4, 0:8] -> 0x0");
  EXPECT_EQ(bursts_of(part, 0), 4);
  EXPECT_EQ(arch::row_gather_traffic(view, 16, 0, 4, 0, 8).runs, 4);
  EXPECT_EQ(part.counters.dram_read_bytes, 4 * 32);

  // A gathered tile of consecutive whole rows costs what the plain tile of X costs, cycle for cycle.
  const RunResult gathered = run("load G[0:4, 0:16] -> 0x0");
  const RunResult plain = run("load X[0:4, 0:16] -> 0x0");
  EXPECT_EQ(bursts_of(gathered, 0), 1);
  EXPECT_EQ(bursts_of(plain, 0), 1);
  EXPECT_EQ(gathered.counters.cycles, plain.counters.cycles);
  EXPECT_EQ(gathered.counters.dram_read_bytes, plain.counters.dram_read_bytes);

  // Zero rows alone: no DRAM traffic at all, the tile still written.
  const RunResult zeros = run("load G[5:7, 0:16] -> 0x0");
  EXPECT_EQ(bursts_of(zeros, 0), 0);
  EXPECT_EQ(zeros.counters.dram_read_bytes, 0);
  EXPECT_EQ(zeros.counters.sram_write_bytes, 2 * 64);
}

// The combine's shape: a gather of an output the program wrote, ordered by its semaphores.
TEST(RowGatherDma, GathersRowsOfAnOutputWrittenEarlierInTheProgram) {
  Machine machine(machine_spec());
  const std::string text = kHeader +
                           "tensor X fp32 6x16 at 0x0 input seed=3 id=0\n"
                           "tensor Y fp32 6x16 at 0x1000 output\n"
                           "tensor Z fp32 4x16 at 0x2000 output\n"
                           "tensor YG fp32 4x16 view gather Y rows=5,4,-1,0\n"
                           "core 0,0\n"
                           "  dma0 load X[0:6, 0:16] -> 0x0 ; signal x\n"
                           "  dma1 store 0x0 -> Y[0:6, 0:16] ; wait x ; signal y\n"
                           "  dma0 load YG[0:4, 0:16] -> 0x1000 ; wait y ; signal g\n"
                           "  dma1 store 0x1000 -> Z[0:4, 0:16] ; wait g\n";
  const RunResult result = machine.run(arch::read_program(text, "g.tprog"), RunOptions{});
  const ops::HostTensor x = source_x(6);
  std::string detail;
  EXPECT_TRUE(holds_gathered_rows(result.outputs.at(1), x, {0, 1, 2, 3, 4, 5}, 0, 0, 16, &detail)) << detail;
  EXPECT_TRUE(holds_gathered_rows(result.outputs.at(2), x, {5, 4, -1, 0}, 0, 0, 16, &detail)) << detail;
}

TEST(ValuesFillDma, AValuesFilledInputStoredBackOutEqualsTheValues) {
  Machine machine(machine_spec());
  const std::string text = kHeader +
                           "tensor R int32 4x8 at 0x0 input seed=1 id=0 fill=values "
                           "values=0-7,-3*8,2147483647,-2147483648,5,5,9,1,0,0,100-107\n"
                           "tensor S int8 1x6 at 0x100 input seed=1 id=1 fill=values values=-128,127,0,-1*3\n"
                           "tensor O int32 4x8 at 0x1000 output\n"
                           "tensor T int8 1x6 at 0x2000 output\n"
                           "core 0,0\n"
                           "  dma0 load R[0:4, 0:8] -> 0x0 ; signal r\n"
                           "  dma1 store 0x0 -> O[0:4, 0:8] ; wait r\n"
                           "  dma0 load S[0:1, 0:6] -> 0x200 ; signal s\n"
                           "  dma1 store 0x200 -> T[0:1, 0:6] ; wait s\n";
  const arch::Program program = arch::read_program(text, "v.tprog");
  const RunResult result = machine.run(program, RunOptions{});
  const std::vector<int64_t>& values = program.tensors[0].fill_if<arch::ValuesFill>()->values;
  ASSERT_EQ(values.size(), 32u);
  const ops::HostTensor& out = result.outputs.at(2);
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(out.value(static_cast<int64_t>(i)), static_cast<double>(values[i])) << "element " << i;
  EXPECT_EQ(out.value(16), 2147483647.0);
  EXPECT_EQ(out.value(17), -2147483648.0);
  const std::vector<double> bytes = {-128, 127, 0, -1, -1, -1};
  for (size_t i = 0; i < bytes.size(); ++i)
    EXPECT_EQ(result.outputs.at(3).value(static_cast<int64_t>(i)), bytes[i]) << "element " << i;
}

}  // namespace tessera::sim
