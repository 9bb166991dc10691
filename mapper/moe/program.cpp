// The lowering of a MoE layer's mapping to a tile program (mapper/moe/stage.hpp): the ep and ep-split
// placements here, the all-to-all placement in program_a2a.cpp, what they share in program_kit.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "arch/isa/noc_send.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vec_route.hpp"
#include "common/integer_math.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/moe/plan.hpp"
#include "mapper/moe/program_kit.hpp"
#include "mapper/moe/stage.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper {

using namespace moe;  // NOLINT: the plan's types

arch::Program MoeStage::lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                              const arch::ArchSpec& spec, const std::string& program_name) const {
  if (choice_of(mapping).placement == a2a) return lower_a2a(op, seed, mapping, spec, program_name);
  const ops::MoeShape& s = shape_;
  const std::shared_ptr<const ops::MoeRouting> routing = routing_of(op, seed);
  std::vector<int64_t> counts(static_cast<size_t>(s.experts));
  for (int64_t e = 0; e < s.experts; ++e) counts[static_cast<size_t>(e)] = routing->count(e);
  const Rows rows = rows_of(counts);

  arch::Program program;
  arch::TensorDecl output;
  Tensors t = start_moe_program(program, program_name, op, seed, spec, *routing, output);
  auto intermediate = [&](const char* name, DType dtype, int64_t tensor_rows, int64_t cols) {
    return add_tensor(program, intermediate_tensor(name, dtype, tensor_rows, cols));
  };
  t.h = intermediate("H", dtype_, rows.kept, s.ffn);
  if (s.shared_experts > 0) t.hs = intermediate("HS", dtype_, s.tokens, s.shared_experts * s.ffn);
  t.y = intermediate("Y", dtype_, rows.kept + (s.shared_experts > 0 ? s.tokens : 0), s.hidden);
  // The gathers: X's rows in expert order (the permutation), and each token's routes' rows of Y.
  {
    arch::TensorDecl xg;
    xg.name = "XG";
    xg.dtype = dtype_;
    xg.rows = std::max<int64_t>(1, rows.kept);
    xg.cols = s.hidden;
    xg.role = arch::TensorRole::view;
    xg.row_gather = arch::RowGatherView{t.x, routing->expert_tokens};
    if (rows.kept == 0) xg.row_gather->rows = {-1};
    t.xg = add_tensor(program, xg);
    arch::TensorDecl yg;
    yg.name = "YG";
    yg.dtype = dtype_;
    yg.rows = s.tokens * s.top_k;
    yg.cols = s.hidden;
    yg.role = arch::TensorRole::view;
    std::vector<int64_t> gathered(static_cast<size_t>(s.tokens * s.top_k), -1);
    std::vector<int64_t> next(rows.offsets.begin(), rows.offsets.end() - 1);
    // Expert e's kept tokens are in token order: walking the tokens in order meets them in order.
    for (int64_t token = 0; token < s.tokens; ++token)
      for (int64_t j = 0; j < s.top_k; ++j) {
        const ops::MoeRoute& route = routing->routes[static_cast<size_t>(token * s.top_k + j)];
        if (route.kept)
          gathered[static_cast<size_t>(token * s.top_k + j)] = next[static_cast<size_t>(route.expert)]++;
      }
    yg.row_gather = arch::RowGatherView{t.y, std::move(gathered)};
    t.yg = add_tensor(program, yg);
  }
  t.o = add_tensor(program, output);  // the last tensor: the one the numerics check reads

  const Plan plan = plan_of(*this, mapping, spec, counts, t);
  const Choice& choice = choice_of(mapping);
  const Layout layout = layout_of(*this, choice.tile_m, choice.tile_n, choice.tile_k);
  const GemmBuffers& router = layout.router;
  const GemmBuffers& experts = layout.experts;
  const CombineBuffers& buffers = layout.combine;

  // Phases 1 and 2 per core, then the barrier: each core's last store waits for its others and tells every
  // combining core.
  std::vector<int> combining, working;
  for (int c = 0; c < plan.cores; ++c) {
    if (!plan.combine[static_cast<size_t>(c)].empty()) combining.push_back(c);
    if (!plan.work[static_cast<size_t>(c)].empty()) working.push_back(c);
  }
  std::vector<std::vector<arch::Instruction>> lists(static_cast<size_t>(plan.cores));
  for (int c : working) {
    auto& list = lists[static_cast<size_t>(c)];
    std::vector<TileJob> router_jobs, expert_jobs;
    for (const TileJob& job : plan.work[static_cast<size_t>(c)])
      (job.epilogue == Epilogue::route ? router_jobs : expert_jobs).push_back(job);
    std::vector<size_t> stores;
    const PassEngines engines = job_engines(mapping, spec);
    JobEmitter(program, list, *this, mapping.dataflow, spec, engines, "r_")
        .emit(router_jobs, router, t.r, stores);
    JobEmitter(program, list, *this, mapping.dataflow, spec, engines, "e_")
        .emit(expert_jobs, experts, t.r, stores);
    for (size_t i = 0; i + 1 < stores.size(); ++i)
      list[stores[i]].signals.push_back(arch::SemaphoreRef{program.semaphore_id("stored"), arch::kSameCore});
    arch::Instruction& last = list[stores.back()];
    if (stores.size() > 1)
      last.waits.push_back(
          arch::SemaphoreWait{arch::SemaphoreRef{program.semaphore_id("stored"), arch::kSameCore},
                              static_cast<int>(stores.size() - 1)});
    for (int to : combining)
      last.signals.push_back(
          arch::SemaphoreRef{program.semaphore_id("experts_done"), to == c ? arch::kSameCore : to});
  }
  // Phase 3: the combine. Its loads (G, the gathered rows, the shared rows) cut into row blocks dealt round
  // the load engines, its stores round the store engines; a buffer's free signalled to each engine of its
  // next load; the barrier taken once, by the first load engine, which lets each other engine go.
  const PassEngines engines = combine_engines(spec);
  const arch::DmaSpec& dma = spec.core.dma;
  const int64_t e = size_bytes(dtype_);
  const arch::QueueId vec_queue{arch::QueueKind::vec, 0};
  auto semaphore = [&](const std::string& name) {
    return arch::SemaphoreRef{program.semaphore_id("c_" + name), arch::kSameCore};
  };
  auto on = [&](const char* name, int index, const EngineGroup& group, int engine) {
    return semaphore(engine_semaphore(name, fmt::format("[{}]", index), group, engine));
  };
  auto dma_queue = [](int engine) { return arch::QueueId{arch::QueueKind::dma, engine}; };
  for (int c : combining) {
    auto& list = lists[static_cast<size_t>(c)];
    const auto& jobs = plan.combine[static_cast<size_t>(c)];
    // Every job's blocks, in queue order: G (a block's first chunk), the gathered rows, the shared rows.
    struct JobBlocks {
      std::vector<DealtBlock> g, x, y, out;
    };
    std::vector<JobBlocks> dealt(jobs.size());
    {
      EngineDealer loads(engines.loads, dma), stores(engines.stores, dma);
      for (size_t i = 0; i < jobs.size(); ++i) {
        const CombineJob& job = jobs[i];
        if (job.first_chunk) dealt[i].g = loads.deal(job.rows, s.top_k * 4);
        dealt[i].x = loads.deal(job.rows * s.top_k, job.cols * e);
        if (s.shared_experts > 0) dealt[i].y = loads.deal(job.rows, job.cols * e);
        dealt[i].out = stores.deal(job.rows, job.cols * e);
      }
    }
    // The engines of the next G load after job i (into the same buffer: two blocks on), and of job i + 2's
    // rows (none left: the first engine's, unwaited).
    auto next_g_engines = [&](size_t i) {
      int seen = 0;
      for (size_t j = i + 1; j < jobs.size(); ++j)
        if (jobs[j].first_chunk && ++seen == 2) return engines_of(dealt[j].g);
      return std::vector<int>{engines.loads.first};
    };
    auto next_x_engines = [&](size_t i) {
      if (i + 2 >= jobs.size()) return std::vector<int>{engines.loads.first};
      std::vector<DealtBlock> rows = dealt[i + 2].x;
      rows.insert(rows.end(), dealt[i + 2].y.begin(), dealt[i + 2].y.end());
      return engines_of(rows);
    };
    std::vector<char> started(static_cast<size_t>(dma.engines), 0);
    auto first_on = [&](int engine, arch::Waits& waits, arch::Signals& signals) {
      if (started[static_cast<size_t>(engine)]) return;
      started[static_cast<size_t>(engine)] = 1;
      if (engine != engines.loads.first) {
        waits.push_back(arch::SemaphoreWait{on("go", 0, engines.loads, engine), 1});
        return;
      }
      waits.insert(waits.begin(), arch::SemaphoreWait{arch::SemaphoreRef{program.semaphore_id("experts_done"),
                                                                         arch::kSameCore},
                                                      static_cast<int>(working.size())});
      for (int other = engines.loads.first + 1; other < engines.loads.first + engines.loads.count; ++other)
        signals.push_back(on("go", 0, engines.loads, other));
    };
    int64_t blocks = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const CombineJob& job = jobs[i];
      const JobBlocks& at = dealt[i];
      const int b = static_cast<int>(i % 2);
      const int gb = static_cast<int>((blocks - (job.first_chunk ? 0 : 1)) % 2);
      if (job.first_chunk) {
        std::vector<int> waited;
        for (const DealtBlock& block : at.g) {
          arch::DmaLoad load;
          load.source = arch::TensorRegion{t.g, job.first + block.rows.first, block.rows.rows, 0, s.top_k};
          load.sram_address = buffers.g[gb] + static_cast<uint64_t>(block.rows.first * s.top_k * 4);
          arch::Waits waits;
          arch::Signals signals = {semaphore(fmt::format("g_full[{}]", gb))};
          first_on(block.engine, waits, signals);
          if (blocks >= 2 && std::find(waited.begin(), waited.end(), block.engine) == waited.end()) {
            waits.push_back(arch::SemaphoreWait{on("g_free", gb, engines.loads, block.engine), 1});
            waited.push_back(block.engine);
          }
          list.push_back(make_instruction(dma_queue(block.engine), load, waits, signals));
        }
        ++blocks;
      }
      // The gathered rows, then the shared rows into the buffer beside them: both wait for the buffers' free.
      std::vector<int> waited;
      auto emit_rows = [&](const DealtBlock& block, int tensor, int64_t first_row, uint64_t sram) {
        arch::DmaLoad load;
        load.source =
            arch::TensorRegion{tensor, first_row + block.rows.first, block.rows.rows, job.col, job.cols};
        load.sram_address = sram + static_cast<uint64_t>(block.rows.first * job.cols * e);
        arch::Waits waits;
        arch::Signals signals = {semaphore(fmt::format("x_full[{}]", b))};
        first_on(block.engine, waits, signals);
        if (i >= 2 && std::find(waited.begin(), waited.end(), block.engine) == waited.end()) {
          waits.push_back(arch::SemaphoreWait{on("x_free", b, engines.loads, block.engine), 1});
          waited.push_back(block.engine);
        }
        list.push_back(make_instruction(dma_queue(block.engine), load, waits, signals));
      };
      for (const DealtBlock& block : at.x) emit_rows(block, t.yg, job.first * s.top_k, buffers.x[b]);
      for (const DealtBlock& block : at.y) emit_rows(block, t.y, rows.kept + job.first, buffers.y[b]);
      arch::VecOp sum;
      sum.kind = arch::VectorKind::weighted_sum;
      sum.dtype = dtype_;
      sum.out_dtype = dtype_;
      sum.x_address = buffers.x[b];
      sum.g_address = buffers.g[gb];
      sum.o_address = buffers.out[b];
      sum.rows = job.rows;
      sum.cols = job.cols;
      sum.parts = s.top_k;
      if (s.shared_experts > 0) sum.y_address = buffers.y[b], sum.chain = {arch::VecFn::add};
      arch::Waits sum_waits = {arch::SemaphoreWait{semaphore(fmt::format("x_full[{}]", b)),
                                                   static_cast<int>(at.x.size() + at.y.size())}};
      if (job.first_chunk)
        sum_waits.push_back(
            arch::SemaphoreWait{semaphore(fmt::format("g_full[{}]", gb)), static_cast<int>(at.g.size())});
      if (i >= 2)
        sum_waits.push_back(arch::SemaphoreWait{semaphore(fmt::format("out_free[{}]", b)),
                                                static_cast<int>(dealt[i - 2].out.size())});
      arch::Signals signals;
      for (int engine : next_x_engines(i)) signals.push_back(on("x_free", b, engines.loads, engine));
      for (int engine : engines_of(at.out)) signals.push_back(on("out_full", b, engines.stores, engine));
      if (job.last_chunk)
        for (int engine : next_g_engines(i)) signals.push_back(on("g_free", gb, engines.loads, engine));
      list.push_back(make_instruction(vec_queue, sum, sum_waits, signals));
      for (const DealtBlock& block : at.out) {
        arch::DmaStore store;
        store.sram_address = buffers.out[b] + static_cast<uint64_t>(block.rows.first * job.cols * e);
        store.destination =
            arch::TensorRegion{t.o, job.first + block.rows.first, block.rows.rows, job.col, job.cols};
        list.push_back(
            make_instruction(dma_queue(block.engine), store,
                             {arch::SemaphoreWait{on("out_full", b, engines.stores, block.engine), 1}},
                             {semaphore(fmt::format("out_free[{}]", b))}));
      }
    }
  }
  finish_program(program, lists, spec);
  return program;
}

}  // namespace tessera::mapper
