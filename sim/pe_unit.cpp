#include "sim/pe_unit.hpp"

#include <algorithm>
#include <memory>

#include "arch/timing/pe_traffic.hpp"
#include "ops/tensor.hpp"
#include "ops/tile_kernels.hpp"
#include "ops/vector_kernels.hpp"

namespace tessera::sim {

namespace {
int64_t packed_or(int64_t pitch, int64_t row_bytes) {
  return pitch != 0 ? pitch : row_bytes;
}

// An operand or result tile of a PE instruction in SRAM.
struct Tile {
  uint64_t address = 0;
  int64_t rows = 0, row_bytes = 0, pitch = 0;
  uint64_t end() const { return address + static_cast<uint64_t>((rows - 1) * pitch + row_bytes); }
};
Tile tile(uint64_t address, int64_t rows, int64_t row_bytes, int64_t pitch) {
  return Tile{address, rows, row_bytes, packed_or(pitch, row_bytes)};
}

// A matmul's A, W and O; a conv's input, filter and output tiles.
struct OperandTiles {
  Tile a, w, o;
};
OperandTiles tiles_of(const arch::Operation& operation) {
  if (const auto* conv = arch::operation_if<arch::PeConv>(operation)) {
    const int64_t element = size_bytes(conv->dtype), accumulator = size_bytes(conv->o_dtype());
    return {tile(conv->a_address, conv->ih * conv->iw, conv->c * element, conv->a_pitch_bytes),
            tile(conv->w_address, conv->r * conv->s * conv->c, conv->m * element, conv->w_pitch_bytes),
            tile(conv->o_address, conv->e * conv->q, conv->m * accumulator, conv->o_pitch_bytes)};
  }
  const auto& matmul = std::get<arch::PeMatmul>(operation);
  const int64_t element = size_bytes(matmul.dtype), accumulator = size_bytes(matmul.o_dtype());
  return {tile(matmul.a_address, matmul.m, matmul.k * element, matmul.a_pitch_bytes),
          tile(matmul.w_address, matmul.w_rows(), matmul.w_cols() * element, matmul.w_pitch_bytes),
          tile(matmul.o_address, matmul.m, matmul.n * accumulator, matmul.o_pitch_bytes)};
}
}  // namespace

PeUnit::PeUnit(sc_core::sc_module_name name, MachineState& machine, int core)
    : Unit(name, machine, core, arch::QueueId{arch::QueueKind::pe, 0}),
      timing_(machine.spec.core.pe_array),
      rs_timing_(machine.spec),
      bank_words_(machine.spec.core.sram.banks, 0) {}

void PeUnit::reset_run_state() {
  pipeline_ = arch::PePipeline{};
  rs_pipeline_ = arch::RsPipeline{};
  drain_end_ = 0;
  last_complete_ = 0;
}

void PeUnit::count_sram_traffic(const arch::Operation& operation) {
  std::fill(bank_words_.begin(), bank_words_.end(), 0);
  arch::PeSramTraffic traffic;
  if (const auto* conv = arch::operation_if<arch::PeConv>(operation)) {
    traffic = arch::conv_sram_traffic(conv->dataflow, conv->dtype, conv->o_dtype(),
                                      arch::tile_shape_of(*conv), conv->accumulate, machine_.spec);
  } else {
    const auto& op = std::get<arch::PeMatmul>(operation);
    traffic = arch::pe_sram_traffic(op.dataflow, op.dtype, op.o_dtype(), op.m, op.n, op.k, op.accumulate,
                                    timing_.rows(), timing_.cols());
  }
  const OperandTiles tiles = tiles_of(operation);
  Fabric& fabric = machine_.fabric;
  fabric.count_bank_words(tiles.a.address, tiles.a.rows, tiles.a.row_bytes, tiles.a.pitch, traffic.a_passes,
                          bank_words_);
  fabric.count_bank_words(tiles.w.address, tiles.w.rows, tiles.w.row_bytes, tiles.w.pitch, traffic.w_passes,
                          bank_words_);
  fabric.count_bank_words(tiles.o.address, tiles.o.rows, tiles.o.row_bytes, tiles.o.pitch,
                          traffic.o_writes + traffic.o_reads, bank_words_);
  read_bytes_ = traffic.read_bytes;
  write_bytes_ = traffic.write_bytes;
}

void PeUnit::advance(Tick ready, int64_t stream_start_cycle, int64_t stream, int64_t complete,
                     int32_t position) {
  // Between two streams the array is draining the previous fold, then idle waiting for operands (a bubble
  // with the cause of the wait), then preloading and filling for this fold.
  const Tick stream_start = cycles_to_ticks(stream_start_cycle);
  timeline_.advance(std::min(drain_end_, stream_start), arch::Cause::fill_drain, position);
  timeline_.advance_waits(std::min(ready, stream_start), waits_, position);
  timeline_.advance(stream_start, arch::Cause::fill_drain, position);
  timeline_.advance(stream_start + cycles_to_ticks(stream), arch::Cause::busy, position);
  drain_end_ = std::max(drain_end_, cycles_to_ticks(complete));
  last_complete_ = std::max(last_complete_, complete);
  ++counters_.folds;
}

std::pair<Tick, Tick> PeUnit::schedule(const arch::Operation& operation, Tick ready, int32_t position) {
  int64_t ready_cycle = ticks_to_cycles_ceil(ready);
  int64_t first_load = -1, complete = 0;
  auto note = [&](int64_t load_start, int64_t done) {
    if (first_load < 0) first_load = load_start;
    complete = std::max(complete, done);
  };
  const auto* conv = arch::operation_if<arch::PeConv>(operation);
  if (conv && conv->dataflow == arch::Dataflow::rs) {
    if (rs_pipeline_.drained < last_complete_) ready_cycle = std::max(ready_cycle, last_complete_);
    const arch::ConvTileShape shape = arch::tile_shape_of(*conv);
    rs_timing_.for_each_round(shape, conv->dtype, [&](const arch::RsRound& round) {
      const arch::RsRoundTiming t = rs_timing_.schedule(round, ready_cycle, rs_pipeline_);
      note(t.load_start, t.complete);
      advance(ready, t.compute_start, round.compute, t.complete, position);
      counters_.active_pes = std::max(counters_.active_pes, round.pes);
    });
    return {cycles_to_ticks(first_load), cycles_to_ticks(complete)};
  }
  if (pipeline_.array_free < last_complete_) ready_cycle = std::max(ready_cycle, last_complete_);
  int64_t m = 0, n = 0, k = 0;
  arch::Dataflow dataflow = arch::Dataflow::ws;
  if (conv) {
    const arch::ConvMatmul mm = arch::matmul_of(arch::tile_shape_of(*conv));
    m = mm.m, n = mm.n, k = mm.k, dataflow = conv->dataflow;
  } else {
    const auto& matmul = std::get<arch::PeMatmul>(operation);
    m = matmul.m, n = matmul.n, k = matmul.k, dataflow = matmul.dataflow;
  }
  timing_.for_each_fold(dataflow, m, n, k, [&](const arch::Fold& fold) {
    const arch::FoldTiming t = timing_.schedule(dataflow, fold, ready_cycle, pipeline_);
    note(t.load_start, t.complete);
    advance(ready, t.stream_start, fold.stream, t.complete, position);
    counters_.active_pes = std::max(counters_.active_pes, fold.rows_used * fold.cols_used);
  });
  return {cycles_to_ticks(first_load), cycles_to_ticks(complete)};
}

void PeUnit::execute(const arch::Instruction& instruction, int32_t position) {
  const arch::Operation& operation = instruction.operation;
  if (const auto* post = arch::operation_if<arch::PePost>(operation)) {
    run_post(*post, instruction);
    return;
  }
  const auto [first_load, scheduled_complete] = schedule(operation, now(), position);
  Tick complete = scheduled_complete;
  count_sram_traffic(operation);
  if (const auto* conv = arch::operation_if<arch::PeConv>(operation)) {
    counters_.macs += conv->macs();
  } else {
    const auto& matmul = std::get<arch::PeMatmul>(operation);
    counters_.macs += matmul.m * matmul.n * matmul.k;
  }
  machine_.fabric.traffic().sram_read_bytes += read_bytes_;
  machine_.fabric.traffic().sram_write_bytes += write_bytes_;
  const Tick stretch = machine_.fabric.book_pe_traffic(core_, first_load, complete, bank_words_);
  if (stretch > 0) {
    // A bank that could not serve the array in time holds the last stream: everything after moves with it.
    const int64_t stretch_cycles = ticks_to_cycles_ceil(stretch);
    timeline_.advance(timeline_.cursor() + cycles_to_ticks(stretch_cycles), arch::Cause::bank_conflict,
                      position);
    pipeline_.input_free += stretch_cycles;
    pipeline_.stationary_free += stretch_cycles;
    pipeline_.drain_free += stretch_cycles;
    pipeline_.array_free += stretch_cycles;
    rs_pipeline_.bus_free += stretch_cycles;
    rs_pipeline_.drained += stretch_cycles;
    rs_pipeline_.spad_free += stretch_cycles;
    last_complete_ += stretch_cycles;
    complete += cycles_to_ticks(stretch_cycles);
    drain_end_ = std::max(drain_end_, complete);
  }

  std::function<void()> commit;
  wait_until(first_load);
  if (machine_.functional) commit = functional_commit(operation, first_load);
  complete_at(complete, instruction, std::move(commit));
}

std::function<void()> PeUnit::functional_commit(const arch::Operation& operation, Tick first_load) {
  // Operands are read when the array starts on them; the result lands in SRAM when the last fold completes.
  const OperandTiles tiles = tiles_of(operation);
  const Tile a = tiles.a, w = tiles.w, o = tiles.o;
  // The product is computed in the accumulator type, `cols` per row; O holds partial sums of `psum` type.
  const auto* conv = arch::operation_if<arch::PeConv>(operation);
  const auto* matmul = conv ? nullptr : &std::get<arch::PeMatmul>(operation);
  const DType operand = conv ? conv->dtype : matmul->dtype;
  const DType psum = conv ? conv->o_dtype() : matmul->o_dtype();
  const int64_t cols = conv ? conv->m : matmul->n;
  const bool accumulate = conv ? conv->accumulate : matmul->accumulate;
  const int64_t product_row_bytes = cols * size_bytes(accumulator_of(operand));
  std::function<void(const uint8_t* sram, uint8_t* product)> compute;
  if (conv) {
    const ops::ConvTileGeometry geometry{conv->e,      conv->q,        conv->m,       conv->c,
                                         conv->ih,     conv->iw,       conv->r,       conv->s,
                                         conv->stride, conv->dilation, conv->pad_top, conv->pad_left};
    compute = [operand, a, w, product_row_bytes, geometry](const uint8_t* sram, uint8_t* product) {
      ops::conv_tile(operand, sram + a.address, a.pitch, sram + w.address, w.pitch, product,
                     product_row_bytes, geometry,
                     /*accumulate=*/false);
    };
  } else {
    compute = [operand, a, w, product_row_bytes, m = matmul->m, n = matmul->n, k = matmul->k,
               transposed = matmul->w_transposed](const uint8_t* sram, uint8_t* product) {
      ops::gemm_tile(operand, sram + a.address, a.pitch, sram + w.address, w.pitch, product,
                     product_row_bytes, m, n, k,
                     /*accumulate=*/false, transposed);
    };
  }
  // Every byte of the product is written by the kernel: the buffer is not cleared first (a 64 x 128 fp32
  // tile is 32 KB an instruction).
  std::shared_ptr<uint8_t[]> product(new uint8_t[static_cast<size_t>(o.rows * product_row_bytes)]);
  JobPool::Ticket job;
  if (JobPool* pool = machine_.arithmetic) {
    // On another thread: until the commit waits for it, a write into A or W waits for it first
    // (MachineState::before_sram_write), so it reads the bytes the array found here.
    job = pool->submit(
        [compute, sram = machine_.cores[core_].sram.data(), product] { compute(sram, product.get()); });
    machine_.cores[core_].reading.push_back(
        CoreState::Reading{job, {a.address, w.address}, {a.end(), w.end()}});
  } else {
    compute(machine_.cores[core_].sram.data(), product.get());
  }
  return [this, a, w, o, operand, psum, cols, product_row_bytes, accumulate, first_load, job,
          compute = std::move(compute), product = std::move(product)]() mutable {
    CoreState& core = machine_.cores[core_];
    if (job) {
      machine_.arithmetic->wait(job);
      core.reading.erase(std::find_if(core.reading.begin(), core.reading.end(),
                                      [&](const CoreState::Reading& reading) { return reading.job == job; }));
    }
    // Did a write land in an operand while the array was reading it? Then the array read the new bytes.
    bool raced = false;
    for (const SramWrite& write : core.write_log) {
      if (write.at <= first_load) continue;
      raced = raced || (write.begin < a.end() && a.address < write.end) ||
              (write.begin < w.end() && w.address < write.end);
    }
    // Writes before this instruction started cannot matter to it or to any later one.
    core.write_log.erase(
        std::remove_if(core.write_log.begin(), core.write_log.end(),
                       [first_load](const SramWrite& write) { return write.at <= first_load; }),
        core.write_log.end());
    if (raced) {
      ++machine_.hazards;
      compute(core.sram.data(), product.get());
    }
    machine_.before_sram_write(core_, o.address, o.end());
    ops::write_partial_sums(operand, psum, core.sram.data() + o.address, o.pitch, product.get(),
                            product_row_bytes, o.rows, cols, accumulate);
  };
}

void PeUnit::run_post(const arch::PePost& post, const arch::Instruction& instruction) {
  // The output path applies its steps as the tile drains: done a cycle after the array's last instruction
  // completes; the array's time is its instructions'. It reads the bias row; the tile passes through.
  const Tick complete = std::max(now(), cycles_to_ticks(last_complete_)) + cycles_to_ticks(1);
  if (post.has_bias()) machine_.fabric.traffic().sram_read_bytes += post.cols * size_bytes(post.dtype);
  std::function<void()> commit;
  if (machine_.functional) {
    commit = [this, post] {
      uint8_t* sram = machine_.cores[core_].sram.data();
      const int64_t element = size_bytes(post.dtype);
      const int64_t pitch = post.o_pitch_bytes != 0 ? post.o_pitch_bytes : post.cols * element;
      machine_.before_sram_write(
          core_, post.o_address,
          post.o_address + static_cast<uint64_t>((post.rows - 1) * pitch + post.cols * element));
      std::vector<float> values(static_cast<size_t>(post.rows * post.cols)), bias;
      for (int64_t row = 0; row < post.rows; ++row)
        ops::widen_to_float(post.dtype, sram + post.o_address + row * pitch, post.cols,
                            values.data() + row * post.cols);
      if (post.has_bias()) {
        bias.resize(static_cast<size_t>(post.cols));
        ops::widen_to_float(post.dtype, sram + post.b_address, post.cols, bias.data());
      }
      ops::apply_chain(post.steps, values, {}, bias, post.rows, post.cols);
      ops::write_tile(post.dtype, values, sram + post.o_address, pitch, post.rows, post.cols);
    };
  }
  complete_at(complete, instruction, std::move(commit));
}

void PeUnit::close_timeline() {
  timeline_.advance(drain_end_, arch::Cause::fill_drain);
}

}  // namespace tessera::sim
