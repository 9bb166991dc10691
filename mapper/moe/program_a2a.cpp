// The MoE layer's all-to-all placement lowered (mapper/moe/stage.hpp): tokens sent to their experts' cores
// over the NoC and back.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "arch/isa/noc_send.hpp"
#include "arch/isa/vec_op.hpp"
#include "common/integer_math.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/moe/plan.hpp"
#include "mapper/moe/program_kit.hpp"
#include "mapper/moe/stage.hpp"

namespace tessera::mapper {

using namespace moe;  // NOLINT: the plan's types

namespace {

// What every core's lowering reads: the plan, the tiles, each core's SRAM layout, where each route's row
// lives and the DMA engines' groups.
struct A2aLowering {
  const MoeStage& stage;
  const Mapping& mapping;
  const arch::ArchSpec& spec;
  const A2aPlan& plan;
  const Tensors& tensors;
  int o_tensor = 0;
  int64_t ffn_tile = 0;            // an ffn chunk's columns, and a down GEMM's hidden tile
  int64_t k_tile = 0;              // a gate/up GEMM's contraction chunk
  std::vector<A2aLayout> layouts;  // per core
  // Each route's row (token * top_k + slot) on its expert's core: (core, row index).
  std::vector<std::pair<int, int64_t>> placed;
  // Loads cut into row blocks dealt round the load engines (the weights' chunks, the rows), the output rows
  // round the store engines.
  PassEngines engines;
};

// Each core's layout, checked against its SRAM: the form is sized by one seed's routing, and another layer's
// routing can place more rows on a core.
std::vector<A2aLayout> a2a_layouts(const MoeStage& stage, const ops::Op& op, const A2aPlan& plan,
                                   const arch::ArchSpec& spec, int64_t ffn_tile, int64_t k_tile) {
  std::vector<A2aLayout> layouts;
  for (int c = 0; c < static_cast<int>(plan.cores.size()); ++c) {
    layouts.push_back(a2a_layout(stage, plan, c, ffn_tile, k_tile));
    if (layouts.back().end > spec.core.sram.bytes)
      throw InputError(
          op.where, op.name,
          fmt::format("{}: the all-to-all form's rows on core {} need {} KiB of SRAM, the core has {} "
                      "KiB (the form was sized for another layer's routing)",
                      op.name, c, ceil_div(layouts.back().end, 1024), spec.core.sram.bytes / 1024),
          "map this layer alone, or choose the ep or ep-split form (--dataflow does not)");
  }
  return layouts;
}

// Each route's row on its expert's core: (core, row index).
std::vector<std::pair<int, int64_t>> placed_rows(const A2aPlan& plan, int64_t routes, int64_t top_k) {
  std::vector<std::pair<int, int64_t>> placed(static_cast<size_t>(routes), {-1, 0});
  for (size_t c = 0; c < plan.cores.size(); ++c) {
    const auto& rows = plan.cores[c].rows;
    for (size_t i = 0; i < rows.size(); ++i)
      placed[static_cast<size_t>(rows[i].token * top_k + rows[i].slot)] = {static_cast<int>(c),
                                                                           static_cast<int64_t>(i)};
  }
  return placed;
}

// A copy of `rows` x `cols` from `from` to `to` by the vector unit, `in` rounded to `out`.
arch::VecOp copy_op(uint64_t from, uint64_t to, int64_t rows, int64_t cols, DType in, DType out) {
  arch::VecOp op = arch::VecOp::on_tile(arch::VectorKind::map, in, out, rows, cols, from, to);
  op.chain = {arch::VecFn::scale};  // x * 1: a copy, rounded to `out`
  return op;
}

// Chunk j of an expert's ffn: its columns [first, first + cols), its place among the core's chunks, and the
// H chunk and accumulators it uses (the place's parity).
struct FfnChunk {
  int64_t first = 0, cols = 0, index = 0;
  int buffer = 0;
};

// One core's program: as a home, its tokens' rows routed and sent to their experts' cores, and at the end
// their outputs combined; as an expert's core, its rows received, each expert a fused FFN over ffn chunks,
// and each output row sent back to its home.
class A2aCoreEmitter {
 public:
  A2aCoreEmitter(arch::Program& program, const A2aLowering& lowering, int core,
                 std::vector<arch::Instruction>& list);
  void emit();

 private:
  void deal_weights();
  void emit_dispatch();
  void emit_own_rows();
  void emit_expert(size_t position);
  FfnChunk ffn_chunk(int64_t j) const;
  void emit_gate_up(const A2aPlan::Expert& expert, const FfnChunk& ffn);
  void emit_gate_up_loads(const A2aPlan::Expert& expert, const FfnChunk& ffn, int64_t k0);
  void emit_activation(const A2aPlan::Expert& expert, const FfnChunk& ffn);
  void emit_down(const A2aPlan::Expert& expert, size_t position, const FfnChunk& ffn);
  void emit_return(const A2aPlan::Expert& expert);
  void emit_combine();
  // A buffer's free: to each engine of the next load into it (none left: the first engine's, unwaited).
  void free_signals(const char* name, int index, const std::vector<std::vector<DealtBlock>>& loads,
                    size_t next, arch::Signals& signals) const;

  arch::Program& program_;
  const A2aLowering& lowering_;
  const ops::MoeShape& shape_;
  const int core_;
  std::vector<arch::Instruction>& list_;
  const A2aLayout& layout_;
  const A2aPlan::Core& core_plan_;  // the core's rows and experts
  const Semaphores semaphores_;
  const int64_t element_, row_bytes_;
  const int w_tensors_;                 // gate and up, or up
  const int64_t first_token_, tokens_;  // its home tokens
  // The weights' chunks in the order the core numbers them (expert, ffn chunk, contraction chunk; expert,
  // ffn chunk, hidden tile), each stream dealt round the load engines on its own, as the rows are.
  std::vector<std::vector<DealtBlock>> w_blocks_, wd_blocks_;
  EngineDealer rows_dealer_;
  int g_stores_ = 0;                                 // the router's store blocks of its G rows
  int64_t chunks_ = 0, downs_ = 0, ffn_chunks_ = 0;  // the core's gate/up and down W loads, and ffn chunks
  bool first_matmul_ = true;
};

A2aCoreEmitter::A2aCoreEmitter(arch::Program& program, const A2aLowering& lowering, int core,
                               std::vector<arch::Instruction>& list)
    : program_(program),
      lowering_(lowering),
      shape_(lowering.stage.shape()),
      core_(core),
      list_(list),
      layout_(lowering.layouts[static_cast<size_t>(core)]),
      core_plan_(lowering.plan.cores[static_cast<size_t>(core)]),
      semaphores_(program, "a_"),
      element_(size_bytes(lowering.stage.dtype())),
      row_bytes_(lowering.stage.shape().hidden * element_),
      w_tensors_(lowering.stage.shape().swiglu() ? 2 : 1),
      first_token_(core * lowering.plan.home_tokens),
      tokens_(core < lowering.plan.homes
                  ? std::min(lowering.plan.home_tokens, lowering.stage.shape().tokens - first_token_)
                  : 0),
      rows_dealer_(lowering.engines.loads, lowering.spec.core.dma) {}

void A2aCoreEmitter::emit() {
  deal_weights();
  if (tokens_ > 0) emit_dispatch();
  emit_own_rows();
  for (size_t position = 0; position < core_plan_.experts.size(); ++position) emit_expert(position);
  if (tokens_ > 0) emit_combine();
}

// Every W load's blocks dealt before any is emitted: a GEMM signals its W buffer's free to the engines of the
// load two chunks on.
void A2aCoreEmitter::deal_weights() {
  const int64_t ffn_tile = lowering_.ffn_tile, k_tile = lowering_.k_tile;
  EngineDealer w_dealer(lowering_.engines.loads, lowering_.spec.core.dma),
      wd_dealer(lowering_.engines.loads, lowering_.spec.core.dma);
  for (size_t position = 0; position < core_plan_.experts.size(); ++position)
    for (int64_t first = 0; first < shape_.ffn; first += ffn_tile) {
      const int64_t cols = std::min(ffn_tile, shape_.ffn - first);
      for (int64_t k0 = 0; k0 < shape_.hidden; k0 += k_tile) {
        std::vector<DealtBlock> blocks;
        for (int tensor = 0; tensor < w_tensors_; ++tensor) {
          const std::vector<DealtBlock> part =
              w_dealer.deal(std::min(k_tile, shape_.hidden - k0), cols * element_);
          blocks.insert(blocks.end(), part.begin(), part.end());
        }
        w_blocks_.push_back(std::move(blocks));
      }
      for (int64_t col = 0; col < shape_.hidden; col += ffn_tile)
        wd_blocks_.push_back(wd_dealer.deal(cols, std::min(ffn_tile, shape_.hidden - col) * element_));
    }
}

// Home: its tokens' X rows, their routing (G stored), and each route's row sent to its expert's core.
void A2aCoreEmitter::emit_dispatch() {
  const Tensors& tensors = lowering_.tensors;
  const std::vector<DealtBlock> xh_blocks = rows_dealer_.deal(tokens_, row_bytes_);
  for (const DealtBlock& block : xh_blocks) {
    arch::DmaLoad xh;
    xh.source =
        arch::TensorRegion{tensors.x, first_token_ + block.rows.first, block.rows.rows, 0, shape_.hidden};
    xh.sram_address = layout_.xh + static_cast<uint64_t>(block.rows.first * row_bytes_);
    list_.push_back(make_instruction(dma_queue(block.engine), xh, {}, {semaphores_.here("xh_full")}));
  }
  TileJob job;
  job.m = tokens_, job.n = shape_.experts, job.k = shape_.hidden, job.chunk = lowering_.k_tile;
  job.a = moe::Operand{tensors.x, first_token_, 0, false};
  job.w.push_back(moe::Operand{tensors.wr, 0, 0, false});
  job.epilogue = Epilogue::route;
  job.route_row = first_token_;
  job.out = arch::TensorRegion{tensors.g, first_token_, tokens_, 0, shape_.top_k};
  std::vector<size_t> stores;
  JobEmitter(program_, list_, lowering_.stage, lowering_.mapping.dataflow, lowering_.spec, lowering_.engines,
             "ar_")
      .emit({job}, layout_.router, tensors.r, stores);
  g_stores_ = static_cast<int>(stores.size());
  for (size_t i : stores) list_[i].signals.push_back(semaphores_.here("g_stored"));
  bool first = true;
  for (int64_t token = first_token_; token < first_token_ + tokens_; ++token)
    for (int64_t j = 0; j < shape_.top_k; ++j) {
      const auto [to, row] = lowering_.placed[static_cast<size_t>(token * shape_.top_k + j)];
      const uint64_t slot =
          lowering_.layouts[static_cast<size_t>(to)].xr + static_cast<uint64_t>(row * row_bytes_);
      if (to == core_) continue;  // loaded from DRAM by this core as its expert's row (emit_own_rows)
      arch::NocSend send;
      send.source_address = layout_.xh + static_cast<uint64_t>((token - first_token_) * row_bytes_);
      send.rows = 1;
      send.row_bytes = row_bytes_;
      send.destination_core = to;
      send.destination_address = slot;
      arch::Waits waits;
      if (first) waits.push_back(semaphores_.wait("xh_full", static_cast<int>(xh_blocks.size())));
      first = false;
      list_.push_back(make_instruction(noc_queue(), send, waits, {semaphores_.at("x_in", to)}));
    }
}

// Expert: the rows of its own home tokens, from DRAM (the others arrive over the NoC).
void A2aCoreEmitter::emit_own_rows() {
  for (size_t i = 0; i < core_plan_.rows.size(); ++i)
    if (lowering_.plan.home_of(core_plan_.rows[i].token) == core_) {
      arch::DmaLoad x;
      x.source = arch::TensorRegion{lowering_.tensors.x, core_plan_.rows[i].token, 1, 0, shape_.hidden};
      x.sram_address = layout_.xr + static_cast<uint64_t>(static_cast<int64_t>(i) * row_bytes_);
      list_.push_back(make_instruction(dma_queue(rows_dealer_.deal(1, row_bytes_).front().engine), x, {},
                                       {semaphores_.here("x_in")}));
    }
}

// An expert's fused FFN over its ffn chunks, software-pipelined: chunk j + 1's gate/up GEMMs run on the PE
// array while the vector unit activates chunk j, then chunk j's down GEMMs; then its rows back home.
void A2aCoreEmitter::emit_expert(size_t position) {
  const A2aPlan::Expert& expert = core_plan_.experts[position];
  const int64_t chunks = ceil_div(shape_.ffn, lowering_.ffn_tile);
  emit_gate_up(expert, ffn_chunk(0));
  for (int64_t j = 0; j < chunks; ++j) {
    if (j + 1 < chunks) emit_gate_up(expert, ffn_chunk(j + 1));
    emit_down(expert, position, ffn_chunk(j));
  }
  ffn_chunks_ += chunks;
  emit_return(expert);
}

FfnChunk A2aCoreEmitter::ffn_chunk(int64_t j) const {
  FfnChunk chunk;
  chunk.first = j * lowering_.ffn_tile;
  chunk.cols = std::min(lowering_.ffn_tile, shape_.ffn - chunk.first);
  chunk.index = ffn_chunks_ + j;
  chunk.buffer = static_cast<int>(chunk.index % 2);
  return chunk;
}

// The chunk's gate/up GEMMs over the contraction's chunks, then its activation.
void A2aCoreEmitter::emit_gate_up(const A2aPlan::Expert& expert, const FfnChunk& ffn) {
  const uint64_t a_rows = layout_.xr + static_cast<uint64_t>(expert.first * row_bytes_);
  for (int64_t k0 = 0; k0 < shape_.hidden; k0 += lowering_.k_tile, ++chunks_) {
    const int64_t k = std::min(lowering_.k_tile, shape_.hidden - k0);
    const int w_buffer = static_cast<int>(chunks_ % 2);
    emit_gate_up_loads(expert, ffn, k0);
    for (int tensor = 0; tensor < w_tensors_; ++tensor) {
      arch::PeMatmul mm;
      mm.dataflow = lowering_.mapping.dataflow;
      mm.dtype = lowering_.stage.dtype();
      mm.a_address = a_rows + static_cast<uint64_t>(k0 * element_);
      mm.a_pitch_bytes = row_bytes_;
      mm.w_address = layout_.w[w_buffer][tensor];
      mm.o_address = layout_.acc[ffn.buffer][tensor];
      mm.m = expert.rows, mm.n = ffn.cols, mm.k = k;
      mm.accumulate = k0 > 0;
      arch::Waits waits;
      if (tensor == 0) {
        waits.push_back(semaphores_.wait(fmt::format("w_full[{}]", w_buffer),
                                         static_cast<int>(w_blocks_[static_cast<size_t>(chunks_)].size())));
        if (first_matmul_)
          waits.push_back(semaphores_.wait("x_in", static_cast<int>(core_plan_.rows.size())));
        if (k0 == 0 && ffn.index >= 2)
          waits.push_back(semaphores_.wait(fmt::format("acc_free[{}]", ffn.buffer)));
      }
      first_matmul_ = false;
      arch::Signals signals;
      if (tensor == w_tensors_ - 1) {
        free_signals("w_free", w_buffer, w_blocks_, static_cast<size_t>(chunks_ + 2), signals);
        if (k0 + k >= shape_.hidden)
          signals.push_back(semaphores_.here(fmt::format("acc_full[{}]", ffn.buffer)));
      }
      list_.push_back(make_instruction(pe_queue(), mm, waits, signals));
    }
  }
  emit_activation(expert, ffn);
}

// The W tensors' blocks of one contraction chunk, one after another: tensor i's are the i-th share of them.
void A2aCoreEmitter::emit_gate_up_loads(const A2aPlan::Expert& expert, const FfnChunk& ffn, int64_t k0) {
  const Tensors& tensors = lowering_.tensors;
  const int w_buffer = static_cast<int>(chunks_ % 2);
  const std::vector<DealtBlock>& blocks = w_blocks_[static_cast<size_t>(chunks_)];
  std::vector<int> waited;
  for (size_t piece = 0; piece < blocks.size(); ++piece) {
    const int tensor = static_cast<int>(piece * static_cast<size_t>(w_tensors_) / blocks.size());
    const DealtBlock& block = blocks[piece];
    arch::DmaLoad load;
    load.source = arch::TensorRegion{tensor == 0 && w_tensors_ == 2 ? tensors.wg : tensors.wu,
                                     expert.expert * shape_.hidden + k0 + block.rows.first, block.rows.rows,
                                     ffn.first, ffn.cols};
    load.sram_address =
        layout_.w[w_buffer][tensor] + static_cast<uint64_t>(block.rows.first * ffn.cols * element_);
    arch::Waits waits;
    if (chunks_ >= 2 && first_on(waited, block.engine))
      waits.push_back(arch::SemaphoreWait{
          semaphores_.on_engine("w_free", w_buffer, lowering_.engines.loads, block.engine), 1});
    list_.push_back(make_instruction(dma_queue(block.engine), load, waits,
                                     {semaphores_.here(fmt::format("w_full[{}]", w_buffer))}));
  }
}

// H chunk = act(gate) * up, in the op's type.
void A2aCoreEmitter::emit_activation(const A2aPlan::Expert& expert, const FfnChunk& ffn) {
  const int buffer = ffn.buffer;
  arch::VecOp act;
  act.kind = arch::VectorKind::map;
  act.dtype = DType::fp32;
  act.out_dtype = lowering_.stage.dtype();
  act.x_address = layout_.acc[buffer][0];
  act.o_address = layout_.h[buffer];
  act.rows = expert.rows, act.cols = ffn.cols;
  if (shape_.swiglu()) {
    act.chain = {arch::VecFn::swiglu};
    act.y_address = layout_.acc[buffer][1];
  } else {
    act.chain = {arch::VecFn::gelu};
  }
  arch::Waits waits = {semaphores_.wait(fmt::format("acc_full[{}]", buffer))};
  if (ffn.index >= 2) waits.push_back(semaphores_.wait(fmt::format("h_free[{}]", buffer)));
  list_.push_back(make_instruction(vec_queue(), act, waits,
                                   {semaphores_.here(fmt::format("acc_free[{}]", buffer)),
                                    semaphores_.here(fmt::format("h_full[{}]", buffer))}));
}

// The H chunk's part of every hidden tile of Y (the expert at `position` of the core's waits for the Y
// accumulator the one before it has rounded).
void A2aCoreEmitter::emit_down(const A2aPlan::Expert& expert, size_t position, const FfnChunk& ffn) {
  const int64_t ffn_tile = lowering_.ffn_tile;
  const int h_buffer = ffn.buffer;
  for (int64_t col = 0; col < shape_.hidden; col += ffn_tile, ++downs_) {
    const int64_t cols = std::min(ffn_tile, shape_.hidden - col);
    const int w_buffer = static_cast<int>(downs_ % 2);
    const std::vector<DealtBlock>& blocks = wd_blocks_[static_cast<size_t>(downs_)];
    std::vector<int> waited;
    for (const DealtBlock& block : blocks) {
      arch::DmaLoad load;
      load.source =
          arch::TensorRegion{lowering_.tensors.wd, expert.expert * shape_.ffn + ffn.first + block.rows.first,
                             block.rows.rows, col, cols};
      load.sram_address = layout_.wd[w_buffer] + static_cast<uint64_t>(block.rows.first * cols * element_);
      arch::Waits waits;
      if (downs_ >= 2 && first_on(waited, block.engine))
        waits.push_back(arch::SemaphoreWait{
            semaphores_.on_engine("wd_free", w_buffer, lowering_.engines.loads, block.engine), 1});
      list_.push_back(make_instruction(dma_queue(block.engine), load, waits,
                                       {semaphores_.here(fmt::format("wd_full[{}]", w_buffer))}));
    }
    arch::PeMatmul mm;
    mm.dataflow = lowering_.mapping.dataflow;
    mm.dtype = lowering_.stage.dtype();
    mm.a_address = layout_.h[h_buffer];
    mm.w_address = layout_.wd[w_buffer];
    mm.o_address = layout_.yacc + static_cast<uint64_t>(col * 4);
    mm.o_pitch_bytes = shape_.hidden * 4;
    mm.m = expert.rows, mm.n = cols, mm.k = ffn.cols;
    mm.accumulate = ffn.first > 0;
    arch::Waits waits = {
        semaphores_.wait(fmt::format("wd_full[{}]", w_buffer), static_cast<int>(blocks.size()))};
    if (col == 0) waits.push_back(semaphores_.wait(fmt::format("h_full[{}]", h_buffer)));
    if (ffn.first == 0 && col == 0 && position > 0) waits.push_back(semaphores_.wait("yacc_free"));
    arch::Signals signals;
    free_signals("wd_free", w_buffer, wd_blocks_, static_cast<size_t>(downs_ + 2), signals);
    const bool last_tile = col + cols >= shape_.hidden;
    if (last_tile) signals.push_back(semaphores_.here(fmt::format("h_free[{}]", h_buffer)));
    if (last_tile && ffn.first + ffn.cols >= shape_.ffn) signals.push_back(semaphores_.here("y_done"));
    list_.push_back(make_instruction(pe_queue(), mm, waits, signals));
  }
}

// Y rounded to the op's type beside the expert's rows, then each row to its slot on its home core (over the
// NoC, or by the vector unit where the home is this core).
void A2aCoreEmitter::emit_return(const A2aPlan::Expert& expert) {
  const A2aPlan& plan = lowering_.plan;
  const DType dtype = lowering_.stage.dtype();
  bool remote = false, local = false;
  for (int64_t i = 0; i < expert.rows; ++i)
    (plan.home_of(core_plan_.rows[static_cast<size_t>(expert.first + i)].token) == core_ ? local : remote) =
        true;
  arch::Signals rounded = {semaphores_.here("yacc_free")};
  if (remote) rounded.push_back(semaphores_.here("y_noc"));
  if (local) rounded.push_back(semaphores_.here("y_vec"));
  list_.push_back(
      make_instruction(vec_queue(),
                       copy_op(layout_.yacc, layout_.yb + static_cast<uint64_t>(expert.first * row_bytes_),
                               expert.rows, shape_.hidden, DType::fp32, dtype),
                       {semaphores_.wait("y_done")}, rounded));
  bool first_send = true, first_copy = true;
  for (int64_t i = 0; i < expert.rows; ++i) {
    const A2aPlan::Row& row = core_plan_.rows[static_cast<size_t>(expert.first + i)];
    const int home = plan.home_of(row.token);
    const uint64_t from = layout_.yb + static_cast<uint64_t>((expert.first + i) * row_bytes_);
    const uint64_t slot =
        lowering_.layouts[static_cast<size_t>(home)].slots +
        static_cast<uint64_t>(((row.token - home * plan.home_tokens) * shape_.top_k + row.slot) * row_bytes_);
    arch::Waits waits;
    if (home != core_) {
      arch::NocSend send;
      send.source_address = from;
      send.rows = 1;
      send.row_bytes = row_bytes_;
      send.destination_core = home;
      send.destination_address = slot;
      if (first_send) waits.push_back(semaphores_.wait("y_noc"));
      first_send = false;
      list_.push_back(make_instruction(noc_queue(), send, waits, {semaphores_.at("y_in", home)}));
    } else {
      if (first_copy) waits.push_back(semaphores_.wait("y_vec"));
      first_copy = false;
      list_.push_back(make_instruction(vec_queue(), copy_op(from, slot, 1, shape_.hidden, dtype, dtype),
                                       waits, {semaphores_.here("y_in")}));
    }
  }
}

// Home: the combine, once every route's row is in its slot.
void A2aCoreEmitter::emit_combine() {
  const EngineGroup& loads = lowering_.engines.loads;
  const EngineGroup& stores = lowering_.engines.stores;
  // G, a few bytes a token: whole, on the first load engine.
  arch::DmaLoad g;
  g.source = arch::TensorRegion{lowering_.tensors.g, first_token_, tokens_, 0, shape_.top_k};
  g.sram_address = layout_.g;
  list_.push_back(make_instruction(dma_queue(loads.first), g, {semaphores_.wait("g_stored", g_stores_)},
                                   {semaphores_.here("g_full")}));
  arch::VecOp sum;
  sum.kind = arch::VectorKind::weighted_sum;
  sum.dtype = lowering_.stage.dtype();
  sum.out_dtype = lowering_.stage.dtype();
  sum.x_address = layout_.slots;
  sum.g_address = layout_.g;
  sum.o_address = layout_.out;
  sum.rows = tokens_;
  sum.cols = shape_.hidden;
  sum.parts = shape_.top_k;
  const std::vector<DealtBlock> out_blocks =
      EngineDealer(stores, lowering_.spec.core.dma).deal(tokens_, row_bytes_);
  arch::Signals full;
  for (int engine : engines_of(out_blocks))
    full.push_back(semaphores_.here(engine_semaphore("out_full", "", stores, engine)));
  list_.push_back(make_instruction(
      vec_queue(), sum,
      {semaphores_.wait("g_full"), semaphores_.wait("y_in", static_cast<int>(tokens_ * shape_.top_k))},
      full));
  for (const DealtBlock& block : out_blocks) {
    arch::DmaStore o;
    o.sram_address = layout_.out + static_cast<uint64_t>(block.rows.first * row_bytes_);
    o.destination = arch::TensorRegion{lowering_.o_tensor, first_token_ + block.rows.first, block.rows.rows,
                                       0, shape_.hidden};
    list_.push_back(
        make_instruction(dma_queue(block.engine), o,
                         {semaphores_.wait(engine_semaphore("out_full", "", stores, block.engine))}, {}));
  }
}

void A2aCoreEmitter::free_signals(const char* name, int index,
                                  const std::vector<std::vector<DealtBlock>>& loads, size_t next,
                                  arch::Signals& signals) const {
  const EngineGroup& group = lowering_.engines.loads;
  const std::vector<int> next_engines =
      next < loads.size() ? engines_of(loads[next]) : std::vector<int>{group.first};
  for (int engine : next_engines) signals.push_back(semaphores_.on_engine(name, index, group, engine));
}

}  // namespace

arch::Program MoeStage::lower_a2a(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                  const arch::ArchSpec& spec, const std::string& program_name) const {
  const std::shared_ptr<const ops::MoeRouting> routing = routing_of(op, seed);
  const int cores = spec.mesh.rows * spec.mesh.cols;
  const A2aPlan plan = a2a_plan(*this, *routing, cores);
  const Choice& choice = choice_of(mapping);
  arch::Program program;
  arch::TensorDecl output;
  const Tensors tensors = start_moe_program(program, program_name, op, seed, spec, *routing, output);
  const int o_tensor = add_tensor(program, output);
  const A2aLowering lowering{*this,
                             mapping,
                             spec,
                             plan,
                             tensors,
                             o_tensor,
                             choice.tile_n,
                             choice.tile_k,
                             a2a_layouts(*this, op, plan, spec, choice.tile_n, choice.tile_k),
                             placed_rows(plan, shape_.tokens * shape_.top_k, shape_.top_k),
                             a2a_engines(spec, plan.home_tokens)};
  std::vector<std::vector<arch::Instruction>> lists(static_cast<size_t>(cores));
  for (int c = 0; c < cores; ++c) A2aCoreEmitter(program, lowering, c, lists[static_cast<size_t>(c)]).emit();
  finish_program(program, lists, spec);
  return program;
}

}  // namespace tessera::mapper
