// The lowering of a MoE layer's mapping to a tile program (mapper/moe/stage.hpp): the ep and ep-split
// placements here, the all-to-all placement in program_a2a.cpp, what they share in program_kit.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "arch/isa/vec_op.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/moe/plan.hpp"
#include "mapper/moe/program_kit.hpp"
#include "mapper/moe/stage.hpp"

namespace tessera::mapper {

using namespace moe;  // NOLINT: the plan's types

namespace {

// The ep program's tensors after the op's: the intermediates H, HS and Y; the gathers, X's rows in expert
// order (the permutation) and each token's routes' rows of Y; and O, the last tensor (the one the numerics
// check reads).
void add_ep_tensors(arch::Program& program, const MoeStage& stage, const ops::MoeRouting& routing,
                    const Rows& rows, const arch::TensorDecl& output, Tensors& t) {
  const ops::MoeShape& shape = stage.shape();
  const DType dtype = stage.dtype();
  auto intermediate = [&](const char* name, int64_t tensor_rows, int64_t cols) {
    return add_tensor(program, intermediate_tensor(name, dtype, tensor_rows, cols));
  };
  t.h = intermediate("H", rows.kept, shape.ffn);
  if (shape.shared_experts > 0) t.hs = intermediate("HS", shape.tokens, shape.shared_experts * shape.ffn);
  t.y = intermediate("Y", rows.kept + (shape.shared_experts > 0 ? shape.tokens : 0), shape.hidden);
  arch::TensorDecl xg;
  xg.name = "XG";
  xg.dtype = dtype;
  xg.rows = std::max<int64_t>(1, rows.kept);
  xg.cols = shape.hidden;
  xg.role = arch::TensorRole::view;
  arch::RowGatherView kept_rows{t.x, routing.expert_tokens};
  if (rows.kept == 0) kept_rows.rows = {-1};
  xg.view = std::move(kept_rows);
  t.xg = add_tensor(program, xg);
  arch::TensorDecl yg;
  yg.name = "YG";
  yg.dtype = dtype;
  yg.rows = shape.tokens * shape.top_k;
  yg.cols = shape.hidden;
  yg.role = arch::TensorRole::view;
  std::vector<int64_t> gathered(static_cast<size_t>(shape.tokens * shape.top_k), -1);
  std::vector<int64_t> next(rows.offsets.begin(), rows.offsets.end() - 1);
  // Expert e's kept tokens are in token order: walking the tokens in order meets them in order.
  for (int64_t token = 0; token < shape.tokens; ++token)
    for (int64_t j = 0; j < shape.top_k; ++j) {
      const ops::MoeRoute& route = routing.routes[static_cast<size_t>(token * shape.top_k + j)];
      if (route.kept)
        gathered[static_cast<size_t>(token * shape.top_k + j)] = next[static_cast<size_t>(route.expert)]++;
    }
  yg.view = arch::RowGatherView{t.y, std::move(gathered)};
  t.yg = add_tensor(program, yg);
  t.o = add_tensor(program, output);
}

// What the ep lowering's phases share: the plan, its SRAM layout, the program's tensors, and the cores'
// lists with who works in phases 1 and 2 and who combines in phase 3.
struct EpLowering {
  const MoeStage& stage;
  const Mapping& mapping;
  const arch::ArchSpec& spec;
  const Plan& plan;
  const Layout& layout;
  const Tensors& tensors;
  int64_t kept_rows = 0;  // the routed rows of Y; the shared experts' follow them
  std::vector<int> working, combining;
  std::vector<std::vector<arch::Instruction>> lists;
};

// Phases 1 and 2 of core `core`, then its part of the barrier: its last store waits for its others and tells
// every combining core.
void emit_work(arch::Program& program, EpLowering& lowering, int core) {
  auto& list = lowering.lists[static_cast<size_t>(core)];
  std::vector<TileJob> router_jobs, expert_jobs;
  for (const TileJob& job : lowering.plan.work[static_cast<size_t>(core)])
    (job.epilogue == Epilogue::route ? router_jobs : expert_jobs).push_back(job);
  std::vector<size_t> stores;
  const PassEngines engines = lowering.stage.job_engines(lowering.mapping, lowering.spec);
  const arch::Dataflow dataflow = lowering.mapping.dataflow;
  JobEmitter(program, list, lowering.stage, dataflow, lowering.spec, engines, "r_")
      .emit(router_jobs, lowering.layout.router, lowering.tensors.r, stores);
  JobEmitter(program, list, lowering.stage, dataflow, lowering.spec, engines, "e_")
      .emit(expert_jobs, lowering.layout.experts, lowering.tensors.r, stores);
  const Semaphores barrier(program);
  for (size_t i = 0; i + 1 < stores.size(); ++i) list[stores[i]].signals.push_back(barrier.here("stored"));
  arch::Instruction& last = list[stores.back()];
  if (stores.size() > 1) last.waits.push_back(barrier.wait("stored", static_cast<int>(stores.size() - 1)));
  for (int to : lowering.combining)
    last.signals.push_back(barrier.at("experts_done", to == core ? arch::kSameCore : to));
}

// Phase 3 on one core: the combine. Its loads (G, the gathered rows, the shared rows) cut into row blocks
// dealt round the load engines, its stores round the store engines; a buffer's free signalled to each engine
// of its next load; the barrier taken once, by the first load engine, which lets each other engine go.
class CombineEmitter {
 public:
  CombineEmitter(arch::Program& program, const EpLowering& lowering, int core)
      : lowering_(lowering),
        jobs_(lowering.plan.combine[static_cast<size_t>(core)]),
        buffers_(lowering.layout.combine),
        engines_(lowering.stage.combine_engines(lowering.spec)),
        semaphores_(program, "c_"),
        barrier_(program),
        element_(size_bytes(lowering.stage.dtype())),
        started_(static_cast<size_t>(lowering.spec.core.dma.engines), 0) {
    deal();
  }

  void emit(std::vector<arch::Instruction>& list);

 private:
  // A job's blocks: G (a block's first chunk), the gathered rows, the shared rows, the stores.
  struct JobBlocks {
    std::vector<DealtBlock> g, x, y, out;
  };
  void deal();
  // The engines of the next G load after job i (into the same buffer: two blocks on), and of job i + 2's
  // rows (none left: the first engine's, unwaited).
  std::vector<int> next_g_engines(size_t i) const;
  std::vector<int> next_x_engines(size_t i) const;
  // The barrier, on an engine's first load: the first load engine waits for every working core and lets the
  // others go.
  void start(int engine, arch::Waits& waits, arch::Signals& signals);
  void emit_g_loads(size_t i, int gb, std::vector<arch::Instruction>& list);
  void emit_row_loads(size_t i, std::vector<arch::Instruction>& list);
  void emit_sum(size_t i, int gb, std::vector<arch::Instruction>& list);
  void emit_stores(size_t i, std::vector<arch::Instruction>& list);

  const EpLowering& lowering_;
  const std::vector<CombineJob>& jobs_;
  const CombineBuffers& buffers_;
  const PassEngines engines_;
  const Semaphores semaphores_, barrier_;
  const int64_t element_;
  std::vector<JobBlocks> dealt_;
  std::vector<char> started_;  // per engine: its first load emitted
  int64_t g_blocks_ = 0;       // the G loads so far (a block's first chunk each)
};

void CombineEmitter::deal() {
  const ops::MoeShape& shape = lowering_.stage.shape();
  const arch::DmaSpec& dma = lowering_.spec.core.dma;
  EngineDealer loads(engines_.loads, dma), stores(engines_.stores, dma);
  dealt_.resize(jobs_.size());
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const CombineJob& job = jobs_[i];
    if (job.first_chunk) dealt_[i].g = loads.deal(job.rows, shape.top_k * 4);
    dealt_[i].x = loads.deal(job.rows * shape.top_k, job.cols * element_);
    if (shape.shared_experts > 0) dealt_[i].y = loads.deal(job.rows, job.cols * element_);
    dealt_[i].out = stores.deal(job.rows, job.cols * element_);
  }
}

std::vector<int> CombineEmitter::next_g_engines(size_t i) const {
  int seen = 0;
  for (size_t j = i + 1; j < jobs_.size(); ++j)
    if (jobs_[j].first_chunk && ++seen == 2) return engines_of(dealt_[j].g);
  return std::vector<int>{engines_.loads.first};
}

std::vector<int> CombineEmitter::next_x_engines(size_t i) const {
  if (i + 2 >= jobs_.size()) return std::vector<int>{engines_.loads.first};
  std::vector<DealtBlock> rows = dealt_[i + 2].x;
  rows.insert(rows.end(), dealt_[i + 2].y.begin(), dealt_[i + 2].y.end());
  return engines_of(rows);
}

void CombineEmitter::start(int engine, arch::Waits& waits, arch::Signals& signals) {
  if (started_[static_cast<size_t>(engine)]) return;
  started_[static_cast<size_t>(engine)] = 1;
  if (engine != engines_.loads.first) {
    waits.push_back(arch::SemaphoreWait{semaphores_.on_engine("go", 0, engines_.loads, engine), 1});
    return;
  }
  waits.insert(waits.begin(), barrier_.wait("experts_done", static_cast<int>(lowering_.working.size())));
  for (int other = engines_.loads.first + 1; other < engines_.loads.first + engines_.loads.count; ++other)
    signals.push_back(semaphores_.on_engine("go", 0, engines_.loads, other));
}

void CombineEmitter::emit(std::vector<arch::Instruction>& list) {
  for (size_t i = 0; i < jobs_.size(); ++i) {
    // G's buffer: the block's, which a first chunk loads.
    const int g_buffer = static_cast<int>((g_blocks_ - (jobs_[i].first_chunk ? 0 : 1)) % 2);
    if (jobs_[i].first_chunk) {
      emit_g_loads(i, g_buffer, list);
      ++g_blocks_;
    }
    emit_row_loads(i, list);
    emit_sum(i, g_buffer, list);
    emit_stores(i, list);
  }
}

void CombineEmitter::emit_g_loads(size_t i, int g_buffer, std::vector<arch::Instruction>& list) {
  const int64_t top_k = lowering_.stage.shape().top_k;
  const CombineJob& job = jobs_[i];
  std::vector<int> waited;
  for (const DealtBlock& block : dealt_[i].g) {
    arch::DmaLoad load;
    load.source =
        arch::TensorRegion{lowering_.tensors.g, job.first + block.rows.first, block.rows.rows, 0, top_k};
    load.sram_address = buffers_.g[g_buffer] + static_cast<uint64_t>(block.rows.first * top_k * 4);
    arch::Waits waits;
    arch::Signals signals = {semaphores_.here(fmt::format("g_full[{}]", g_buffer))};
    start(block.engine, waits, signals);
    if (g_blocks_ >= 2 && first_on(waited, block.engine))
      waits.push_back(
          arch::SemaphoreWait{semaphores_.on_engine("g_free", g_buffer, engines_.loads, block.engine), 1});
    list.push_back(make_instruction(dma_queue(block.engine), load, waits, signals));
  }
}

// The gathered rows, then the shared rows into the buffer beside them: both wait for the buffers' free.
void CombineEmitter::emit_row_loads(size_t i, std::vector<arch::Instruction>& list) {
  const int64_t top_k = lowering_.stage.shape().top_k;
  const CombineJob& job = jobs_[i];
  const int buffer = static_cast<int>(i % 2);
  struct RowSource {
    const std::vector<DealtBlock>& blocks;
    int tensor;
    int64_t first_row;
    uint64_t sram;
  };
  const RowSource sources[] = {
      {dealt_[i].x, lowering_.tensors.yg, job.first * top_k, buffers_.x[buffer]},
      {dealt_[i].y, lowering_.tensors.y, lowering_.kept_rows + job.first, buffers_.y[buffer]}};
  std::vector<int> waited;
  for (const RowSource& rows : sources)
    for (const DealtBlock& block : rows.blocks) {
      arch::DmaLoad load;
      load.source = arch::TensorRegion{rows.tensor, rows.first_row + block.rows.first, block.rows.rows,
                                       job.col, job.cols};
      load.sram_address = rows.sram + static_cast<uint64_t>(block.rows.first * job.cols * element_);
      arch::Waits waits;
      arch::Signals signals = {semaphores_.here(fmt::format("x_full[{}]", buffer))};
      start(block.engine, waits, signals);
      if (i >= 2 && first_on(waited, block.engine))
        waits.push_back(
            arch::SemaphoreWait{semaphores_.on_engine("x_free", buffer, engines_.loads, block.engine), 1});
      list.push_back(make_instruction(dma_queue(block.engine), load, waits, signals));
    }
}

// O's rows = the routes' rows weighted by G (+ the shared rows).
void CombineEmitter::emit_sum(size_t i, int g_buffer, std::vector<arch::Instruction>& list) {
  const ops::MoeShape& shape = lowering_.stage.shape();
  const CombineJob& job = jobs_[i];
  const JobBlocks& blocks = dealt_[i];
  const int buffer = static_cast<int>(i % 2);
  arch::VecOp sum;
  sum.kind = arch::VectorKind::weighted_sum;
  sum.dtype = lowering_.stage.dtype();
  sum.out_dtype = lowering_.stage.dtype();
  sum.x_address = buffers_.x[buffer];
  sum.g_address = buffers_.g[g_buffer];
  sum.o_address = buffers_.out[buffer];
  sum.rows = job.rows;
  sum.cols = job.cols;
  sum.parts = shape.top_k;
  if (shape.shared_experts > 0) sum.y_address = buffers_.y[buffer], sum.chain = {arch::VecFn::add};
  arch::Waits waits = {semaphores_.wait(fmt::format("x_full[{}]", buffer),
                                        static_cast<int>(blocks.x.size() + blocks.y.size()))};
  if (job.first_chunk)
    waits.push_back(semaphores_.wait(fmt::format("g_full[{}]", g_buffer), static_cast<int>(blocks.g.size())));
  if (i >= 2)
    waits.push_back(
        semaphores_.wait(fmt::format("out_free[{}]", buffer), static_cast<int>(dealt_[i - 2].out.size())));
  arch::Signals signals;
  for (int engine : next_x_engines(i))
    signals.push_back(semaphores_.on_engine("x_free", buffer, engines_.loads, engine));
  for (int engine : engines_of(blocks.out))
    signals.push_back(semaphores_.on_engine("out_full", buffer, engines_.stores, engine));
  if (job.last_chunk)
    for (int engine : next_g_engines(i))
      signals.push_back(semaphores_.on_engine("g_free", g_buffer, engines_.loads, engine));
  list.push_back(make_instruction(vec_queue(), sum, waits, signals));
}

void CombineEmitter::emit_stores(size_t i, std::vector<arch::Instruction>& list) {
  const CombineJob& job = jobs_[i];
  const int buffer = static_cast<int>(i % 2);
  for (const DealtBlock& block : dealt_[i].out) {
    arch::DmaStore store;
    store.sram_address = buffers_.out[buffer] + static_cast<uint64_t>(block.rows.first * job.cols * element_);
    store.destination = arch::TensorRegion{lowering_.tensors.o, job.first + block.rows.first, block.rows.rows,
                                           job.col, job.cols};
    list.push_back(make_instruction(
        dma_queue(block.engine), store,
        {arch::SemaphoreWait{semaphores_.on_engine("out_full", buffer, engines_.stores, block.engine), 1}},
        {semaphores_.here(fmt::format("out_free[{}]", buffer))}));
  }
}

}  // namespace

arch::Program MoeStage::lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                              const arch::ArchSpec& spec, const std::string& program_name) const {
  if (choice_of(mapping).placement == a2a) return lower_a2a(op, seed, mapping, spec, program_name);
  const std::shared_ptr<const ops::MoeRouting> routing = routing_of(op, seed);
  std::vector<int64_t> counts(static_cast<size_t>(shape_.experts));
  for (int64_t expert = 0; expert < shape_.experts; ++expert)
    counts[static_cast<size_t>(expert)] = routing->count(expert);
  const Rows rows = rows_of(counts);

  arch::Program program;
  arch::TensorDecl output;
  Tensors tensors = start_moe_program(program, program_name, op, seed, spec, *routing, output);
  add_ep_tensors(program, *this, *routing, rows, output, tensors);

  const Plan plan = plan_of(*this, mapping, spec, counts, tensors);
  const Choice& choice = choice_of(mapping);
  const Layout layout = layout_of(*this, choice.tile_m, choice.tile_n, choice.tile_k);
  EpLowering lowering{*this, mapping, spec, plan, layout, tensors, rows.kept, {}, {}, {}};
  for (int c = 0; c < plan.cores; ++c) {
    if (!plan.combine[static_cast<size_t>(c)].empty()) lowering.combining.push_back(c);
    if (!plan.work[static_cast<size_t>(c)].empty()) lowering.working.push_back(c);
  }
  lowering.lists.resize(static_cast<size_t>(plan.cores));
  for (int c : lowering.working) emit_work(program, lowering, c);
  for (int c : lowering.combining)
    CombineEmitter(program, lowering, c).emit(lowering.lists[static_cast<size_t>(c)]);
  finish_program(program, lowering.lists, spec);
  return program;
}

}  // namespace tessera::mapper
