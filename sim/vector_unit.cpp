#include "sim/vector_unit.hpp"

#include <algorithm>
#include <cstring>

#include "arch/isa/vector_kinds/vector_kind_info.hpp"
#include "arch/timing/vector_timing.hpp"
#include "common/error.hpp"
#include "ops/vector_kernels.hpp"
#include "sim/vector_kind_kernels.hpp"

namespace tessera::sim {

namespace {

int64_t packed_or(int64_t pitch, int64_t row_bytes) {
  return pitch != 0 ? pitch : row_bytes;
}

// Passes over a tile of `elements` that `element_reads` reads per element of the work amount to.
int64_t passes_over(int64_t element_reads, int64_t work_elements, int64_t tile_elements) {
  if (element_reads == 0 || tile_elements == 0) return 0;
  const int64_t reads = element_reads * work_elements;
  return (reads + tile_elements - 1) / tile_elements;
}

}  // namespace

VectorUnit::VectorUnit(sc_core::sc_module_name name, MachineState& machine, int core)
    : Unit(name, machine, core, arch::QueueId{arch::QueueKind::vec, 0}),
      bank_words_(machine.spec.core.sram.banks, 0) {}

void VectorUnit::execute(const arch::Instruction& instruction, int32_t position) {
  if (const auto* rope = arch::operation_if<arch::VecRope>(instruction.operation)) {
    execute_rope(instruction, *rope, position);
    return;
  }
  if (const auto* route = arch::operation_if<arch::VecRoute>(instruction.operation)) {
    execute_route(instruction, *route, position);
    return;
  }
  const auto& op = arch::operation_as<arch::VecOp>(instruction.operation);
  const arch::VectorWork work = op.work();

  // SRAM traffic: the words each tile's reads and writes touch, over the instruction's span.
  const int64_t element = size_bytes(op.dtype), out_element = size_bytes(op.out_dtype);
  arch::VectorElementBytes bytes{element, out_element, element};
  const arch::VectorSramTraffic traffic = arch::vector_sram_traffic(work, bytes);
  int64_t x_reads = 0, o_accesses = 0;
  for (const arch::VectorPass& pass : arch::vector_passes(work)) {
    x_reads += pass.input_reads;
    o_accesses += pass.output_reads + pass.output_writes;
  }
  const int64_t work_elements = work.rows * work.cols;
  const int64_t x_rows = op.x_rows(), o_cols = op.o_cols();
  const bool one_per_row = o_cols == 1 && op.cols != 1;
  std::fill(bank_words_.begin(), bank_words_.end(), 0);
  Fabric& fabric = machine_.fabric;
  // The passes' input reads count the tile at y too (the same size): its words are booked on its own below.
  if (op.uses_y()) x_reads -= 1;
  fabric.count_bank_words(op.x_address, x_rows, op.cols * element,
                          packed_or(op.x_pitch_bytes, op.cols * element),
                          passes_over(x_reads, work_elements, x_rows * op.cols), bank_words_);
  fabric.count_bank_words(op.o_address, op.rows, o_cols * out_element,
                          packed_or(op.o_pitch_bytes, o_cols * out_element), one_per_row ? 1 : o_accesses,
                          bank_words_);
  if (op.uses_y())
    fabric.count_bank_words(op.y_address, op.rows, op.cols * element,
                            packed_or(op.y_pitch_bytes, op.cols * element), 1, bank_words_);
  const arch::GRole g_role = arch::info_of(op.kind).operands.g;
  if (g_role == arch::GRole::parameter_row)  // gamma: read once per row
    fabric.count_bank_words(op.g_address, 1, op.cols * element, op.cols * element, op.rows, bank_words_);
  if (op.uses_b())  // beta, or a bias row: read once per row
    fabric.count_bank_words(op.b_address, 1, op.cols * element, op.cols * element, op.rows, bank_words_);
  if (op.uses_statistics()) {  // the running statistics: read (unless first) and written (if updated) once
    const int64_t row_bytes = arch::VecOp::kRowStatistics * size_bytes(DType::fp32);
    const int64_t accesses =
        (op.reads_statistics() ? 1 : 0) + (g_role == arch::GRole::statistics_updated ? 1 : 0);
    fabric.count_bank_words(op.g_address, op.statistics_rows(), row_bytes, row_bytes, accesses, bank_words_);
  }
  if (g_role == arch::GRole::weights) {  // the gate weights: read once
    const int64_t row_bytes = op.parts * size_bytes(DType::fp32);
    fabric.count_bank_words(op.g_address, op.rows, row_bytes, row_bytes, 1, bank_words_);
  }
  run(instruction, position, work, traffic, [&] { return functional_commit(op); });
}

void VectorUnit::execute_rope(const arch::Instruction& instruction, const arch::VecRope& op,
                              int32_t position) {
  const arch::VectorWork work = op.work();
  const int64_t element = size_bytes(op.dtype), table_element = size_bytes(DType::fp32);
  const arch::VectorSramTraffic traffic =
      arch::vector_sram_traffic(work, arch::VectorElementBytes{element, element, table_element});
  // X read and O written once (the two passes cover disjoint columns); the table row read once per head.
  std::fill(bank_words_.begin(), bank_words_.end(), 0);
  Fabric& fabric = machine_.fabric;
  const int64_t row_bytes = op.cols * element, table_bytes = op.rotary_dim * table_element;
  fabric.count_bank_words(op.x_address, op.rows, row_bytes, packed_or(op.x_pitch_bytes, row_bytes), 1,
                          bank_words_);
  fabric.count_bank_words(op.o_address, op.rows, row_bytes, packed_or(op.o_pitch_bytes, row_bytes), 1,
                          bank_words_);
  fabric.count_bank_words(op.y_address, op.rows, table_bytes, packed_or(op.y_pitch_bytes, table_bytes),
                          op.cols / op.head_dim, bank_words_);
  run(instruction, position, work, traffic, [&] {
    const uint8_t* sram = machine_.cores[core_].sram.data();
    const std::vector<float> x = ops::read_tile(op.dtype, sram + op.x_address,
                                                packed_or(op.x_pitch_bytes, row_bytes), op.rows, op.cols);
    const std::vector<float> table = ops::read_tile(
        DType::fp32, sram + op.y_address, packed_or(op.y_pitch_bytes, table_bytes), op.rows, op.rotary_dim);
    std::vector<float> out(x.size());
    ops::rope_rows(x.data(), table.data(), out.data(), op.rows, op.cols, op.head_dim, op.rotary_dim,
                   op.interleaved);
    const int64_t pitch = packed_or(op.o_pitch_bytes, row_bytes);
    return std::function<void()>([this, op, out = std::move(out), pitch, row_bytes]() {
      machine_.log_sram_write(core_, op.o_address, op.rows, row_bytes, pitch);
      ops::write_tile(op.dtype, out, machine_.cores[core_].sram.data() + op.o_address, pitch, op.rows,
                      op.cols);
    });
  });
}

void VectorUnit::execute_route(const arch::Instruction& instruction, const arch::VecRoute& op,
                               int32_t position) {
  const arch::VectorWork work = op.work();
  const int64_t word = size_bytes(DType::fp32);
  const arch::VectorSramTraffic traffic =
      arch::vector_sram_traffic(work, arch::VectorElementBytes{word, word, word});
  // Bank words: X read and written by the score passes, read by the arg-max passes (those over the kept
  // groups' experts as their share of a whole pass) and by the gather (the chosen scores), all rounded up to
  // whole passes over X; I read once; O written by the gather, read back and written by the last pass.
  const arch::VectorPasses passes = arch::vector_passes(work);
  int64_t x_accesses_per_row = 0;  // bounded: (top_k + 7) x 2 x experts <= 2^34
  for (int p = 0; p + 1 < passes.count; ++p) {
    const arch::VectorPass& pass = passes.pass[p];
    const int64_t writes = p + 2 < passes.count ? pass.output_writes : 0;  // the gather writes O, not X
    x_accesses_per_row +=
        (pass.input_reads + writes) * (pass.cols == 0 ? op.experts : pass.cols) * pass.repeats;
  }
  std::fill(bank_words_.begin(), bank_words_.end(), 0);
  Fabric& fabric = machine_.fabric;
  const int64_t x_row_bytes = op.experts * word, k_row_bytes = op.top_k * word;
  fabric.count_bank_words(op.x_address, op.rows, x_row_bytes, packed_or(op.x_pitch_bytes, x_row_bytes),
                          (x_accesses_per_row + op.experts - 1) / op.experts, bank_words_);
  fabric.count_bank_words(op.i_address, op.rows, k_row_bytes, k_row_bytes, 1, bank_words_);
  fabric.count_bank_words(op.o_address, op.rows, k_row_bytes, packed_or(op.o_pitch_bytes, k_row_bytes), 3,
                          bank_words_);
  run(instruction, position, work, traffic, [&] {
    const uint8_t* sram = machine_.cores[core_].sram.data();
    const int64_t x_pitch = packed_or(op.x_pitch_bytes, x_row_bytes);
    std::vector<float> scores =
        ops::read_tile(DType::fp32, sram + op.x_address, x_pitch, op.rows, op.experts);
    std::vector<int32_t> chosen(static_cast<size_t>(op.rows * op.top_k));
    std::memcpy(chosen.data(), sram + op.i_address, chosen.size() * sizeof(int32_t));
    if (const std::string problem = ops::route_choice_problem(chosen.data(), op.rows, op.experts, op.top_k);
        !problem.empty())
      fail_instruction(instruction, position, "the chosen experts at i: " + problem,
                       "each row of i names top_k distinct experts in [0, experts)");
    std::vector<float> weights(chosen.size());
    ops::route_weights(scores.data(), chosen.data(), weights.data(), op.rows, op.experts, op.top_k,
                       op.sigmoid, static_cast<float>(op.scaling));
    const int64_t o_pitch = packed_or(op.o_pitch_bytes, k_row_bytes);
    return std::function<void()>([this, op, scores = std::move(scores), weights = std::move(weights), x_pitch,
                                  o_pitch, x_row_bytes, k_row_bytes]() {
      machine_.log_sram_write(core_, op.x_address, op.rows, x_row_bytes, x_pitch);
      machine_.log_sram_write(core_, op.o_address, op.rows, k_row_bytes, o_pitch);
      uint8_t* sram = machine_.cores[core_].sram.data();
      ops::write_tile(DType::fp32, scores, sram + op.x_address, x_pitch, op.rows, op.experts);
      ops::write_tile(DType::fp32, weights, sram + op.o_address, o_pitch, op.rows, op.top_k);
    });
  });
}

void VectorUnit::run(const arch::Instruction& instruction, int32_t position, const arch::VectorWork& work,
                     const arch::VectorSramTraffic& traffic,
                     const std::function<std::function<void()>()>& compute) {
  const arch::VectorTiming timing = arch::vector_timing(*machine_.spec.core.vector, work);
  // After the waits, and after the previous instruction (its time is on the timeline already).
  const Tick ready = now();
  timeline_.advance_waits(ready, waits_, position);
  const Tick start = std::max(ready, timeline_.cursor());
  Tick end = start + cycles_to_ticks(timing.cycles);
  Fabric& fabric = machine_.fabric;
  fabric.traffic().sram_read_bytes += traffic.read_bytes;
  fabric.traffic().sram_write_bytes += traffic.write_bytes;
  const Tick stretch = fabric.book_pe_traffic(core_, start, end, bank_words_);

  // The issue port busy, then its stalls on row statistics and the pipeline's drain; a bank that could not
  // keep up holds the last of it.
  timeline_.advance(start, arch::Cause::sync, position);
  timeline_.advance(start + cycles_to_ticks(timing.busy_cycles), arch::Cause::busy, position);
  timeline_.advance(end, arch::Cause::fill_drain, position);
  if (stretch > 0) {
    end += cycles_to_ticks(ticks_to_cycles_ceil(stretch));
    timeline_.advance(end, arch::Cause::bank_conflict, position);
  }
  counters_.vector_elements += work.rows * work.cols;

  std::function<void()> commit;
  wait_until(start);
  if (machine_.functional) commit = compute();
  complete_at(end, instruction, std::move(commit));
}

std::function<void()> VectorUnit::functional_commit(const arch::VecOp& op) {
  VectorResult result =
      compute_vector_result(read_vector_operands(machine_.cores[core_].sram.data(), op), op);
  std::vector<float> out = std::move(result.out), statistics = std::move(result.statistics);
  const int64_t out_cols = op.o_cols();
  const int64_t statistics_pitch = arch::VecOp::kRowStatistics * size_bytes(DType::fp32);
  const int64_t pitch = packed_or(op.o_pitch_bytes, out_cols * size_bytes(op.out_dtype));
  return [this, op, out = std::move(out), statistics = std::move(statistics), statistics_pitch, out_cols,
          pitch]() {
    uint8_t* sram = machine_.cores[core_].sram.data();
    if (!statistics.empty()) {
      machine_.log_sram_write(core_, op.g_address,
                              op.g_address + static_cast<uint64_t>(op.rows * statistics_pitch));
      ops::write_tile(DType::fp32, statistics, sram + op.g_address, statistics_pitch, op.rows,
                      arch::VecOp::kRowStatistics);
    }
    // Logged like a DMA's write, so that a PE instruction reading the tile meanwhile sees the race.
    machine_.log_sram_write(core_, op.o_address, op.rows, out_cols * size_bytes(op.out_dtype), pitch);
    ops::write_tile(op.out_dtype, out, sram + op.o_address, pitch, op.rows, out_cols);
  };
}

}  // namespace tessera::sim
