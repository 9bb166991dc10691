// 16-bit partial sums (`psum: fp16` on a contraction, ops/epilogue.hpp): the lowering keeps O's partial sums
// in 16 bits — every PE instruction says psum=fp16, the O buffers hold half the bytes — and the simulator
// rounds each pass as it writes it back: the output is, bit for bit, the passes' fp32 products summed into
// fp16 one after another, not their fp32 sum rounded once, and it still matches the float64 reference.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "arch/isa/program_binary.hpp"
#include "arch/isa/program_text.hpp"
#include "arch/timing/pe_traffic.hpp"
#include "common/config.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "mapper/contraction/buffers.hpp"
#include "mapper/lowering.hpp"
#include "ops/encodings.hpp"
#include "ops/reference.hpp"
#include "ops/tensor.hpp"
#include "ops/tile_kernels.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"

namespace tessera {
namespace {

constexpr uint64_t kSeed = 11;

ops::Op psum_gemm(const std::string& psum) {
  const std::string text =
      "name: p\nseed: 11\nops:\n  - {name: g, kind: gemm, m: 64, n: 96, k: 256, dtype: bf16" +
      (psum.empty() ? std::string() : ", psum: " + psum) + "}\n";
  return std::move(ops::workload_from_yaml(config::load_text(text, "p.yaml")).ops.front());
}

// One core, the whole 64 x 96 output tile resident while k runs in four passes of 64.
mapper::Mapping four_passes(const ops::Op& op, const arch::ArchSpec& spec) {
  mapper::Mapping mapping = best_mapping(op, spec, arch::Dataflow::ws);
  mapping.split_m = 1, mapping.split_n = 1, mapping.split_k = 1;
  mapping.tile_m = 64, mapping.tile_n = 96, mapping.tile_k = 64;
  mapping.order = {mapper::Dim::m, mapper::Dim::n, mapper::Dim::k};
  return mapping;
}

// The 64 x 96 product of A's and W's slices of k [64 p, 64 p + 64), in fp32.
std::vector<float> pass_product(const ops::HostTensor& a, const ops::HostTensor& w, int64_t pass) {
  std::vector<float> product(64 * 96);
  ops::gemm_tile(DType::bf16, a.bytes.data() + pass * 64 * 2, 256 * 2, w.bytes.data() + pass * 64 * 96 * 2,
                 96 * 2, reinterpret_cast<uint8_t*>(product.data()), 96 * 4, 64, 96, 64, false);
  return product;
}

TEST(PartialSums, EveryPassIsRoundedToTheSixteenBitTypeBitForBit) {
  const arch::ArchSpec spec = load_arch("default");
  const ops::Op op = psum_gemm("fp16");
  const mapper::Mapping mapping = four_passes(op, spec);
  const arch::Program program = mapper::lower(op, kSeed, mapping, spec, "psum");
  int pe = 0, accumulating = 0;
  for (const arch::CoreProgram& core : program.cores)
    for (const arch::Instruction& instruction : core.instructions)
      if (const auto* matmul = std::get_if<arch::PeMatmul>(&instruction.operation)) {
        ++pe;
        accumulating += matmul->accumulate ? 1 : 0;
        EXPECT_EQ(matmul->psum, DType::fp16);
        EXPECT_EQ(matmul->o_dtype(), DType::fp16);
      }
  EXPECT_EQ(pe, 4);
  EXPECT_EQ(accumulating, 3);
  // psum= survives the program's text and binary forms.
  EXPECT_EQ(arch::read_program(arch::write_program(program), "psum.tp"), program);
  EXPECT_EQ(arch::read_program_binary(arch::write_program_binary(program)), program);

  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  const ops::HostTensor& output = result.outputs.rbegin()->second;
  ASSERT_EQ(output.dtype, DType::fp16);  // by default the output is stored as the partial sums are
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, kSeed, result, &detail)) << detail;

  const auto inputs = ops::generate_inputs(op, kSeed);
  std::vector<uint16_t> per_pass(64 * 96);
  std::vector<float> exact(64 * 96, 0.0F);
  for (int64_t pass = 0; pass < 4; ++pass) {
    const std::vector<float> product = pass_product(inputs[0], inputs[1], pass);
    ops::write_partial_sums(DType::bf16, DType::fp16, reinterpret_cast<uint8_t*>(per_pass.data()), 96 * 2,
                            reinterpret_cast<const uint8_t*>(product.data()), 96 * 4, 64, 96, pass > 0);
    for (size_t i = 0; i < exact.size(); ++i) exact[i] += product[i];
  }
  int64_t differs_from_once = 0;
  for (size_t i = 0; i < per_pass.size(); ++i) {
    uint16_t simulated;
    std::memcpy(&simulated, output.bytes.data() + 2 * i, 2);
    ASSERT_EQ(simulated, per_pass[i]) << "element " << i;
    differs_from_once += simulated != ops::float_to_fp16(exact[i]) ? 1 : 0;
  }
  // Rounding each pass is not rounding once: some sums land on the other side of a rounding boundary.
  EXPECT_GT(differs_from_once, 0);
}

TEST(PartialSums, SixteenBitPartialSumsTakeHalfTheOBuffersAndTheirPeTraffic) {
  const arch::ArchSpec spec = load_arch("default");
  const ops::Op narrow = psum_gemm("fp16"), wide = psum_gemm("");
  const mapper::Mapping narrow_mapping = four_passes(narrow, spec), wide_mapping = four_passes(wide, spec);
  const mapper::BufferPlan narrow_plan = mapper::plan_buffers(narrow_mapping, spec),
                           wide_plan = mapper::plan_buffers(wide_mapping, spec);
  EXPECT_EQ(narrow_plan.o_row_bytes, 96 * 2);
  EXPECT_EQ(wide_plan.o_row_bytes, 96 * 4);
  EXPECT_EQ(narrow_plan.a_bytes, wide_plan.a_bytes);
  EXPECT_EQ(narrow_plan.w_bytes, wide_plan.w_bytes);
  sim::Machine machine(spec);
  const sim::RunOptions timing(/*functional_run=*/false);
  const sim::RunResult n = machine.run(mapper::lower(narrow, kSeed, narrow_mapping, spec, "n"), timing);
  const sim::RunResult w = machine.run(mapper::lower(wide, kSeed, wide_mapping, spec, "w"), timing);
  // The PE instructions' output traffic, as arch::pe_sram_traffic counts it, is half the bytes; the store of
  // the finished tile reads half the bytes too. Nothing else differs.
  const arch::Program program = mapper::lower(narrow, kSeed, narrow_mapping, spec, "n");
  int64_t reads_saved = 0, writes_saved = 0, o_writes = 0;
  for (const arch::CoreProgram& core : program.cores)
    for (const arch::Instruction& instruction : core.instructions)
      if (const auto* pe = std::get_if<arch::PeMatmul>(&instruction.operation)) {
        const auto traffic = [&](DType o) {
          return arch::pe_sram_traffic(pe->dataflow, pe->dtype, o, pe->m, pe->n, pe->k, pe->accumulate,
                                       spec.core.pe_array.rows, spec.core.pe_array.cols);
        };
        const arch::PeSramTraffic half = traffic(DType::fp16), full = traffic(DType::fp32);
        EXPECT_EQ(half.o_bytes, 64 * 96 * 2);
        reads_saved += full.read_bytes - half.read_bytes;
        writes_saved += full.write_bytes - half.write_bytes;
        o_writes += half.o_writes;
      }
  EXPECT_EQ(writes_saved, o_writes * 64 * 96 * 2);
  EXPECT_EQ(w.counters.sram_write_bytes - n.counters.sram_write_bytes, writes_saved);
  EXPECT_EQ(w.counters.sram_read_bytes - n.counters.sram_read_bytes, reads_saved + 64 * 96 * 2);
  EXPECT_EQ(w.counters.dram_write_bytes, 64 * 96 * 4);
  EXPECT_EQ(n.counters.dram_write_bytes, 64 * 96 * 2);
}

}  // namespace
}  // namespace tessera
