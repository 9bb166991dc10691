#include "sim/pe_unit.hpp"

#include <algorithm>

#include "arch/pe_traffic.hpp"
#include "ops/tile_kernels.hpp"

namespace tessera::sim {

namespace {
int64_t packed_or(int64_t pitch, int64_t row_bytes) {
  return pitch != 0 ? pitch : row_bytes;
}
}  // namespace

PeUnit::PeUnit(sc_core::sc_module_name name, MachineState& machine, int core)
    : Unit(name, machine, core, arch::QueueId{arch::QueueKind::pe, 0}),
      timing_(machine.spec.core.pe_array),
      bank_words_(machine.spec.core.sram.banks, 0) {}

void PeUnit::reset_run_state() {
  pipeline_ = arch::PePipeline{};
  drain_end_ = 0;
}

void PeUnit::count_sram_traffic(const arch::PeMatmul& op) {
  std::fill(bank_words_.begin(), bank_words_.end(), 0);
  const arch::PeSramTraffic traffic = arch::pe_sram_traffic(op.dataflow, op.dtype, op.m, op.n, op.k,
                                                            op.accumulate, timing_.rows(), timing_.cols());
  const int64_t a_row = op.k * size_bytes(op.dtype);
  const int64_t w_row = op.n * size_bytes(op.dtype);
  const int64_t o_row = op.n * size_bytes(accumulator_of(op.dtype));
  Fabric& fabric = machine_.fabric;
  fabric.count_bank_words(op.a_address, op.m, a_row, packed_or(op.a_pitch_bytes, a_row), traffic.a_passes,
                          bank_words_);
  fabric.count_bank_words(op.w_address, op.k, w_row, packed_or(op.w_pitch_bytes, w_row), traffic.w_passes,
                          bank_words_);
  fabric.count_bank_words(op.o_address, op.m, o_row, packed_or(op.o_pitch_bytes, o_row),
                          traffic.o_writes + traffic.o_reads, bank_words_);
  read_bytes_ = traffic.read_bytes;
  write_bytes_ = traffic.write_bytes;
}

void PeUnit::execute(const arch::Instruction& instruction, int32_t position) {
  const auto& op = std::get<arch::PeMatmul>(instruction.operation);
  const Tick ready = now();
  const int64_t ready_cycle = ticks_to_cycles_ceil(ready);
  Tick first_load = 0;
  Tick complete = 0;
  bool first = true;
  timing_.for_each_fold(op.dataflow, op.m, op.n, op.k, [&](const arch::Fold& fold) {
    const arch::FoldTiming t = timing_.schedule(op.dataflow, fold, ready_cycle, pipeline_);
    const Tick stream_start = cycles_to_ticks(t.stream_start);
    if (first) first_load = cycles_to_ticks(t.load_start);
    first = false;
    // Between two streams the array is draining the previous fold, then idle waiting for operands (a bubble
    // with the cause of the wait), then preloading and filling for this fold.
    timeline_.advance(std::min(drain_end_, stream_start), Cause::fill_drain, position);
    timeline_.advance_waits(std::min(ready, stream_start), waits_, position);
    timeline_.advance(stream_start, Cause::fill_drain, position);
    timeline_.advance(stream_start + cycles_to_ticks(fold.stream), Cause::busy, position);
    drain_end_ = std::max(drain_end_, cycles_to_ticks(t.complete));
    complete = std::max(complete, cycles_to_ticks(t.complete));
    ++counters_.folds;
  });

  count_sram_traffic(op);
  machine_.fabric.traffic().sram_read_bytes += read_bytes_;
  machine_.fabric.traffic().sram_write_bytes += write_bytes_;
  const Tick stretch = machine_.fabric.book_pe_traffic(core_, first_load, complete, bank_words_);
  if (stretch > 0) {
    // A bank that could not serve the array in time holds the last stream: everything after moves with it.
    const int64_t stretch_cycles = ticks_to_cycles_ceil(stretch);
    timeline_.advance(timeline_.cursor() + cycles_to_ticks(stretch_cycles), Cause::bank_conflict, position);
    pipeline_.input_free += stretch_cycles;
    pipeline_.stationary_free += stretch_cycles;
    pipeline_.drain_free += stretch_cycles;
    pipeline_.array_free += stretch_cycles;
    complete += cycles_to_ticks(stretch_cycles);
    drain_end_ = std::max(drain_end_, complete);
  }
  counters_.macs += op.m * op.n * op.k;

  std::function<void()> commit;
  if (machine_.functional) {
    // Operands are read when the array starts on them; the result lands in SRAM when the last fold completes.
    wait_until(first_load);
    const DType accumulator = accumulator_of(op.dtype);
    const int64_t element = size_bytes(op.dtype);
    const int64_t o_row = op.n * size_bytes(accumulator);
    std::vector<uint8_t> product(static_cast<size_t>(op.m * o_row));
    const std::vector<uint8_t>& sram = machine_.cores[core_].sram;
    ops::gemm_tile(op.dtype, sram.data() + op.a_address, packed_or(op.a_pitch_bytes, op.k * element),
                   sram.data() + op.w_address, packed_or(op.w_pitch_bytes, op.n * element), product.data(),
                   o_row, op.m, op.n, op.k, /*accumulate=*/false);
    const int64_t a_pitch = packed_or(op.a_pitch_bytes, op.k * element);
    const int64_t w_pitch = packed_or(op.w_pitch_bytes, op.n * element);
    commit = [this, op, accumulator, o_row, a_pitch, w_pitch, first_load,
              product = std::move(product)]() mutable {
      CoreState& core = machine_.cores[core_];
      // Did a write land in an operand while the array was reading it? Then the array read the new bytes.
      const uint64_t a_end =
          op.a_address + static_cast<uint64_t>((op.m - 1) * a_pitch + op.k * size_bytes(op.dtype));
      const uint64_t w_end =
          op.w_address + static_cast<uint64_t>((op.k - 1) * w_pitch + op.n * size_bytes(op.dtype));
      bool raced = false;
      for (const SramWrite& write : core.write_log) {
        if (write.at <= first_load) continue;
        raced = raced || (write.begin < a_end && op.a_address < write.end) ||
                (write.begin < w_end && op.w_address < write.end);
      }
      // Writes before this instruction started cannot matter to it or to any later one.
      core.write_log.erase(
          std::remove_if(core.write_log.begin(), core.write_log.end(),
                         [first_load](const SramWrite& write) { return write.at <= first_load; }),
          core.write_log.end());
      if (raced) {
        ++machine_.hazards;
        ops::gemm_tile(op.dtype, core.sram.data() + op.a_address, a_pitch, core.sram.data() + op.w_address,
                       w_pitch, product.data(), o_row, op.m, op.n, op.k, /*accumulate=*/false);
      }
      uint8_t* o = core.sram.data() + op.o_address;
      const int64_t pitch = packed_or(op.o_pitch_bytes, o_row);
      if (op.accumulate) {
        ops::add_tile(accumulator, o, pitch, product.data(), o_row, op.m, op.n);
      } else {
        for (int64_t row = 0; row < op.m; ++row)
          std::copy_n(product.data() + row * o_row, o_row, o + row * pitch);
      }
    };
  } else {
    wait_until(first_load);
  }
  complete_at(complete, instruction, std::move(commit));
}

void PeUnit::close_timeline() {
  timeline_.advance(drain_end_, Cause::fill_drain);
}

}  // namespace tessera::sim
