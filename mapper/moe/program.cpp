// The lowering of a MoE layer's mapping to a tile program (mapper/moe_stage.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "arch/isa/noc_send.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vec_route.hpp"
#include "common/integer_math.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/moe/plan.hpp"
#include "mapper/moe/stage.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper {

using namespace moe;  // NOLINT: the plan's types

namespace {

// Emits a core's GEMM tile jobs with double-buffered operand chunks and accumulators, the loads cut into row
// blocks dealt round the load engines and the stores round the store engines (mapper/dma_engines.hpp), a
// buffer's free signalled to each engine of its next load. Semaphores are named with `prefix`; each store
// block's instruction index is appended to `stores`.
class JobEmitter {
 public:
  JobEmitter(arch::Program& program, std::vector<arch::Instruction>& list, const MoeStage& stage,
             arch::Dataflow dataflow, const arch::ArchSpec& spec, const PassEngines& engines,
             std::string prefix)
      : program_(program),
        list_(list),
        stage_(stage),
        dataflow_(dataflow),
        prefix_(std::move(prefix)),
        dma_(spec.core.dma),
        engines_(engines) {}

  void emit(const std::vector<TileJob>& jobs, const GemmBuffers& b, int route_tensor,
            std::vector<size_t>& stores) {
    const ops::MoeShape& s = stage_.shape();
    const DType dtype = stage_.dtype();
    const int64_t e = size_bytes(dtype);
    // The blocks of every chunk's A and W loads and of every job's store, dealt in queue order. A row block
    // of H is read only once it is stored: its first down job's first A load, whole on the first load engine
    // (the only one that waits for h_stored: an engine that took another's signal could read rows not yet
    // stored), lets each other engine that carries its H rows go (`h_go`, per engine), and the first of those
    // blocks on each waits for it; later ones follow in queue order.
    struct ChunkBlocks {
      std::vector<DealtBlock> a, w;  // w: the W tensors' blocks one after another
      std::vector<int> w_blocks;     // per W tensor
      std::vector<char> a_waits_go;  // per A block: the first of its row block of H on its engine
      std::vector<int> go_to;        // the engines this chunk's A load (a row block's first) lets go
    };
    std::vector<ChunkBlocks> chunk_blocks;
    std::vector<std::vector<DealtBlock>> store_blocks;
    {
      EngineDealer loads(engines_.loads, dma_), out(engines_.stores, dma_);
      std::vector<int> h_tensors;  // the tensors the jobs so far store H into
      // Per row block of H (tensor, first row): the chunk whose A load waits for it stored, the engines
      // that carry its rows so far.
      std::map<std::pair<int, int64_t>, std::pair<size_t, std::vector<int>>> h_reads;
      for (const TileJob& job : jobs) {
        const bool reads_h = std::find(h_tensors.begin(), h_tensors.end(), job.a.tensor) != h_tensors.end();
        TESSERA_ASSERT(reads_h || job.h_waits == 0, "a job that waits for H reads H");
        for (int64_t k0 = 0; k0 < job.k; k0 += job.chunk) {
          const int64_t k = std::min(job.chunk, job.k - k0);
          ChunkBlocks chunk;
          if (reads_h && k0 == 0 && job.h_waits > 0) {
            chunk.a = {DealtBlock{RowBlock{0, job.m}, engines_.loads.first}};
            h_reads[{job.a.tensor, job.a.row}] = {chunk_blocks.size(), {engines_.loads.first}};
          } else {
            chunk.a = loads.deal(job.m, k * e);
          }
          chunk.a_waits_go.assign(chunk.a.size(), 0);
          if (reads_h && !(k0 == 0 && job.h_waits > 0)) {
            const auto found = h_reads.find({job.a.tensor, job.a.row});
            TESSERA_ASSERT(found != h_reads.end(),
                           "a row block of H is first read by the job that waits for it");
            std::vector<int>& seen = found->second.second;
            for (size_t i = 0; i < chunk.a.size(); ++i)
              if (std::find(seen.begin(), seen.end(), chunk.a[i].engine) == seen.end()) {
                seen.push_back(chunk.a[i].engine);
                chunk.a_waits_go[i] = 1;
                chunk_blocks[found->second.first].go_to.push_back(chunk.a[i].engine);
              }
          }
          for (size_t i = 0; i < job.w.size(); ++i) {
            const std::vector<DealtBlock> w = loads.deal(k, job.n * e);
            chunk.w.insert(chunk.w.end(), w.begin(), w.end());
            chunk.w_blocks.push_back(static_cast<int>(w.size()));
          }
          chunk_blocks.push_back(std::move(chunk));
        }
        store_blocks.push_back(job.epilogue == Epilogue::route ? out.deal(job.m, s.top_k * 4)
                                                               : out.deal(job.m, job.n * e));
        if (job.stores_h && std::find(h_tensors.begin(), h_tensors.end(), job.out.tensor) == h_tensors.end())
          h_tensors.push_back(job.out.tensor);
      }
    }
    // The list grows by exactly this much: reserved, so that a lowering of millions of instructions neither
    // copies them as the list doubles nor faults in pages it then leaves.
    size_t added = 0;
    for (const ChunkBlocks& chunk : chunk_blocks) added += chunk.a.size() + chunk.w.size();
    for (size_t t = 0; t < jobs.size(); ++t) {
      const TileJob& job = jobs[t];
      const auto chunks = static_cast<size_t>((job.k + job.chunk - 1) / job.chunk);
      added += chunks * job.w.size() + 1 + store_blocks[t].size() + (job.epilogue == Epilogue::route ? 1 : 0);
    }
    const size_t expected = list_.size() + added;
    list_.reserve(expected);
    auto next_engines = [&](size_t chunk, bool a) {
      if (chunk >= chunk_blocks.size()) return std::vector<int>{engines_.loads.first};
      return engines_of(a ? chunk_blocks[chunk].a : chunk_blocks[chunk].w);
    };
    for (size_t t = 0; t < jobs.size(); ++t) {
      const TileJob& job = jobs[t];
      const int nw = static_cast<int>(job.w.size());
      const int tb = static_cast<int>(t % 2);
      if (job.epilogue == Epilogue::route) {
        // The block's chosen experts, beside its logits (a few bytes a row: whole, on the first engine).
        arch::DmaLoad load;
        load.source = arch::TensorRegion{route_tensor, job.route_row, job.m, 0, s.top_k};
        load.sram_address = b.r;
        arch::Waits waits;
        if (routes_ > 0) waits.push_back(wait(plain("r_free")));
        list_.push_back(make_instruction(dma_queue(engines_.loads.first), load, waits, {plain("r_full")}));
        ++routes_;
      }
      for (int64_t k0 = 0; k0 < job.k; k0 += job.chunk, ++chunks_) {
        const int64_t k = std::min(job.chunk, job.k - k0);
        const int cb = static_cast<int>(chunks_ % 2);
        const ChunkBlocks& blocks = chunk_blocks[static_cast<size_t>(chunks_)];
        std::vector<int> waited_a, waited_w;
        auto first_on = [](std::vector<int>& waited, int engine) {
          if (std::find(waited.begin(), waited.end(), engine) != waited.end()) return false;
          waited.push_back(engine);
          return true;
        };
        for (size_t piece = 0; piece < blocks.a.size(); ++piece) {
          const DealtBlock& block = blocks.a[piece];
          arch::DmaLoad load;
          load.source = arch::TensorRegion{job.a.tensor, job.a.row + block.rows.first, block.rows.rows,
                                           job.a.col + k0, k};
          load.sram_address = b.a[cb] + static_cast<uint64_t>(block.rows.first * k * e);
          arch::Waits waits;
          if (chunks_ >= 2 && first_on(waited_a, block.engine))
            waits.push_back(wait(indexed("a_free", cb, engines_.loads, block.engine)));
          if (k0 == 0 && job.h_waits > 0) waits.push_back(h_stored_wait(job));
          if (blocks.a_waits_go[piece]) waits.push_back(wait(plain("h_go", engines_.loads, block.engine)));
          arch::Signals signals = {indexed("a_full", cb)};
          for (int engine : blocks.go_to) signals.push_back(plain("h_go", engines_.loads, engine));
          list_.push_back(make_instruction(dma_queue(block.engine), load, waits, signals));
        }
        size_t w_block = 0;
        for (int i = 0; i < nw; ++i)
          for (int j = 0; j < blocks.w_blocks[static_cast<size_t>(i)]; ++j, ++w_block) {
            const DealtBlock& block = blocks.w[w_block];
            const moe::Operand& w = job.w[static_cast<size_t>(i)];
            arch::DmaLoad load;
            load.source =
                arch::TensorRegion{w.tensor, w.row + k0 + block.rows.first, block.rows.rows, w.col, job.n};
            load.sram_address = b.w[cb][i] + static_cast<uint64_t>(block.rows.first * job.n * e);
            arch::Waits waits;
            if (chunks_ >= 2 && first_on(waited_w, block.engine))
              waits.push_back(wait(indexed("w_free", cb, engines_.loads, block.engine)));
            list_.push_back(make_instruction(dma_queue(block.engine), load, waits, {indexed("w_full", cb)}));
          }
        for (int i = 0; i < nw; ++i) {
          arch::PeMatmul mm;
          mm.dataflow = dataflow_;
          mm.dtype = dtype;
          mm.a_address = b.a[cb];
          mm.w_address = b.w[cb][i];
          mm.o_address = b.acc[tb][i];
          mm.m = job.m, mm.n = job.n, mm.k = k;
          mm.accumulate = k0 > 0;
          arch::Waits waits;
          if (i == 0) {
            waits.push_back(arch::SemaphoreWait{indexed("a_full", cb), static_cast<int>(blocks.a.size())});
            waits.push_back(arch::SemaphoreWait{indexed("w_full", cb), static_cast<int>(blocks.w.size())});
            if (k0 == 0 && t >= 2) waits.push_back(wait(indexed("acc_free", tb)));
          }
          arch::Signals signals;
          if (i == nw - 1) {
            const auto next = static_cast<size_t>(chunks_ + 2);
            for (int engine : next_engines(next, true))
              signals.push_back(indexed("a_free", cb, engines_.loads, engine));
            for (int engine : next_engines(next, false))
              signals.push_back(indexed("w_free", cb, engines_.loads, engine));
            if (k0 + k >= job.k) signals.push_back(indexed("acc_full", tb));
          }
          list_.push_back(make_instruction(pe_queue_, mm, waits, signals));
        }
      }
      // The epilogue: the accumulators become the stored tile.
      const std::vector<DealtBlock>& stored_in = store_blocks[t];
      arch::Waits waits = {wait(indexed("acc_full", tb))};
      if (t >= 2)
        waits.push_back(
            arch::SemaphoreWait{indexed("out_free", tb), static_cast<int>(store_blocks[t - 2].size())});
      arch::Signals signals = {indexed("acc_free", tb)};
      for (int engine : engines_of(stored_in))
        signals.push_back(indexed("out_full", tb, engines_.stores, engine));
      if (job.epilogue == Epilogue::route) {
        waits.push_back(wait(plain("r_full")));
        signals.push_back(plain("r_free"));
        arch::VecRoute route = stage_.route_op(job.m);
        route.x_address = b.acc[tb][0];
        route.i_address = b.r;
        route.o_address = b.out[tb];
        list_.push_back(make_instruction(vec_queue_, route, waits, signals));
      } else {
        arch::VecOp op;
        op.kind = arch::VectorKind::map;
        op.dtype = DType::fp32;
        op.out_dtype = dtype;
        op.x_address = b.acc[tb][0];
        op.o_address = b.out[tb];
        op.rows = job.m;
        op.cols = job.n;
        if (job.epilogue == Epilogue::round) {
          op.chain = {arch::VecFn::scale};
        } else if (s.swiglu()) {
          op.chain = {arch::VecFn::swiglu};
          op.y_address = b.acc[tb][1];
        } else {
          op.chain = {arch::VecFn::gelu};
        }
        list_.push_back(make_instruction(vec_queue_, op, waits, signals));
      }
      const int64_t row_bytes = job.epilogue == Epilogue::route ? s.top_k * 4 : job.n * e;
      for (const DealtBlock& block : stored_in) {
        arch::DmaStore store;
        store.sram_address = b.out[tb] + static_cast<uint64_t>(block.rows.first * row_bytes);
        store.destination = job.out;
        store.destination.row += block.rows.first;
        store.destination.rows = block.rows.rows;
        arch::Signals stored = {indexed("out_free", tb)};
        if (job.stores_h) stored.push_back(semaphore(h_stored_name(job.out.tensor, job.out.row)));
        stores.push_back(list_.size());
        list_.push_back(make_instruction(dma_queue(block.engine), store,
                                         {wait(indexed("out_full", tb, engines_.stores, block.engine))},
                                         stored));
      }
      if (job.stores_h) h_blocks_[{job.out.tensor, job.out.row}] += static_cast<int>(stored_in.size());
    }
    TESSERA_ASSERT(list_.size() == expected, "a job list's instructions are counted before they are emitted");
  }

 private:
  arch::SemaphoreRef semaphore(const std::string& name) const {
    return arch::SemaphoreRef{program_.semaphore_id(prefix_ + name), arch::kSameCore};
  }
  static arch::SemaphoreWait wait(arch::SemaphoreRef semaphore) { return arch::SemaphoreWait{semaphore, 1}; }
  // The semaphore named `name` (with the prefix; engine_semaphore's name for `engine` of `group`), and the
  // same with "[index]": each name formatted and found in the program once (IndexedSemaphores), for the
  // millions of instructions a MoE layer's lowering names them in.
  arch::SemaphoreRef indexed(const char* name, int index, const EngineGroup& group, int engine) {
    return arch::SemaphoreRef{ids_.id(handle(name, engine - group.first), index), arch::kSameCore};
  }
  arch::SemaphoreRef indexed(const char* name, int index) {
    return arch::SemaphoreRef{ids_.id(handle(name, 0), index), arch::kSameCore};
  }
  arch::SemaphoreRef plain(const char* name, const EngineGroup& group, int engine) {
    return plain_slot(name, engine - group.first);
  }
  arch::SemaphoreRef plain(const char* name) { return plain_slot(name, 0); }
  std::string text_of(const char* name, int slot) const {
    return prefix_ + engine_semaphore(name, "", EngineGroup{0, slot + 1}, slot);
  }
  int handle(const char* name, int slot) {
    for (const Named& named : handles_)
      if (named.name == name && named.slot == slot) return named.value;
    handles_.push_back(Named{name, slot, ids_.name(text_of(name, slot))});
    return handles_.back().value;
  }
  arch::SemaphoreRef plain_slot(const char* name, int slot) {
    for (const Named& named : plain_ids_)
      if (named.name == name && named.slot == slot) return arch::SemaphoreRef{named.value, arch::kSameCore};
    plain_ids_.push_back(Named{name, slot, program_.semaphore_id(text_of(name, slot))});
    return arch::SemaphoreRef{plain_ids_.back().value, arch::kSameCore};
  }
  static arch::QueueId dma_queue(int engine) { return arch::QueueId{arch::QueueKind::dma, engine}; }
  // The stores of a row block of H (its first row `row` of `tensor`) signal h_stored, which the row block's
  // first down job waits for, once per store block. With one store engine the stores complete in queue order
  // and one counter serves every row block; with several, the next row block's blocks could land before this
  // one's last: one counter for even row blocks and one for odd (the one after next is stored only after this
  // one's down job has started).
  std::string h_stored_name(int tensor, int64_t row) {
    if (engines_.stores.count == 1) return "h_stored";
    auto found = std::find(h_rows_.begin(), h_rows_.end(), std::make_pair(tensor, row));
    if (found == h_rows_.end()) found = h_rows_.insert(h_rows_.end(), std::make_pair(tensor, row));
    return fmt::format("h_stored[{}]", (found - h_rows_.begin()) % 2);
  }
  arch::SemaphoreWait h_stored_wait(const TileJob& job) {
    const auto found = h_blocks_.find({job.a.tensor, job.a.row});
    TESSERA_ASSERT(found != h_blocks_.end() && job.h_waits > 0, "a down job's H rows are stored before it");
    return arch::SemaphoreWait{semaphore(h_stored_name(job.a.tensor, job.a.row)), found->second};
  }

  arch::Program& program_;
  std::vector<arch::Instruction>& list_;
  const MoeStage& stage_;
  arch::Dataflow dataflow_;
  std::string prefix_;
  arch::DmaSpec dma_;
  PassEngines engines_;
  arch::QueueId pe_queue_{arch::QueueKind::pe, 0}, vec_queue_{arch::QueueKind::vec, 0};
  int64_t chunks_ = 0, routes_ = 0;
  IndexedSemaphores ids_{program_};
  struct Named {
    const char* name;  // a literal
    int slot;          // the engine's place in its group
    int value;         // a handle of ids_ (handles_), a semaphore id (plain_ids_)
  };
  std::vector<Named> handles_, plain_ids_;
  std::map<std::pair<int, int64_t>, int>
      h_blocks_;                                 // per row block of H (tensor, first row): its store blocks
  std::vector<std::pair<int, int64_t>> h_rows_;  // the row blocks of H, in the order first stored
};

// The cores' instruction lists (core c's at index c; a core without any is left out) as the program's cores
// in mesh order, and its semaphores numbered.
void finish_program(arch::Program& program, std::vector<std::vector<arch::Instruction>>& lists,
                    const arch::ArchSpec& spec) {
  for (size_t c = 0; c < lists.size(); ++c) {
    if (lists[c].empty()) continue;
    program.cores.emplace_back();
    program.cores.back().coord = arch::core_coord(static_cast<int>(c), spec.mesh);
    program.cores.back().instructions = std::move(lists[c]);
  }
  std::sort(program.cores.begin(), program.cores.end(),
            [](const arch::CoreProgram& a, const arch::CoreProgram& b) { return a.coord < b.coord; });
  program.number_semaphores_by_appearance();
}

// An intermediate the program writes and reads back (at least one row).
arch::TensorDecl intermediate_tensor(const char* name, DType dtype, int64_t rows, int64_t cols) {
  arch::TensorDecl tensor;
  tensor.name = name;
  tensor.dtype = dtype;
  tensor.rows = std::max<int64_t>(1, rows);
  tensor.cols = cols;
  tensor.role = arch::TensorRole::output;
  return tensor;
}

// The program's start: the op line, the op's inputs as it declares them (not P: the host's routing follows
// the forced deal), R (each token's chosen experts, by falling weight: the routing's, for vec route) and G
// (the gate weights vec route writes); `output` is O's declaration, for the caller to add last (the tensor
// the numerics check reads).
Tensors start_moe_program(arch::Program& program, const std::string& name, const ops::Op& op, uint64_t seed,
                          const arch::ArchSpec& spec, const ops::MoeRouting& routing,
                          arch::TensorDecl& output) {
  const ops::MoeShape& s = *op.as<ops::MoeShape>();
  start_program(program, name, op, seed, spec);
  Tensors t;
  for (const ops::TensorDesc& desc : ops::tensors_of(op)) {
    if (desc.name == "P") continue;
    if (desc.is_output) {
      output = declared_tensor(desc, seed);
      continue;
    }
    const int index = add_tensor(program, declared_tensor(desc, seed));
    (desc.name == "X"        ? t.x
     : desc.name == "Wr"     ? t.wr
     : desc.name == "W_gate" ? t.wg
     : desc.name == "W_up"   ? t.wu
     : desc.name == "W_down" ? t.wd
     : desc.name == "S_gate" ? t.sg
     : desc.name == "S_up"   ? t.su
                             : t.sd) = index;
  }
  arch::TensorDecl r;
  r.name = "R";
  r.dtype = DType::int32;
  r.rows = s.tokens;
  r.cols = s.top_k;
  r.role = arch::TensorRole::input;
  std::vector<int64_t> values(static_cast<size_t>(s.tokens * s.top_k));
  for (size_t i = 0; i < values.size(); ++i) values[i] = routing.routes[i].expert;
  r.values = std::move(values);
  t.r = add_tensor(program, r);
  t.g = add_tensor(program, intermediate_tensor("G", DType::fp32, s.tokens, s.top_k));
  return t;
}

}  // namespace

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

namespace tessera::mapper {

arch::Program MoeStage::lower_a2a(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                  const arch::ArchSpec& spec, const std::string& program_name) const {
  const ops::MoeShape& s = shape_;
  const std::shared_ptr<const ops::MoeRouting> routing = routing_of(op, seed);
  const int cores = spec.mesh.rows * spec.mesh.cols;
  const A2aPlan plan = a2a_plan(*this, *routing, cores);
  const Choice& choice = choice_of(mapping);
  const int64_t tf = choice.tile_n, tk = choice.tile_k;
  const int64_t e = size_bytes(dtype_), row_bytes = s.hidden * e, hb = plan.home_tokens;
  const int nw = s.swiglu() ? 2 : 1;
  arch::Program program;
  arch::TensorDecl output;
  const Tensors t = start_moe_program(program, program_name, op, seed, spec, *routing, output);
  const int o_tensor = add_tensor(program, output);
  std::vector<A2aLayout> layouts;
  for (int c = 0; c < cores; ++c) {
    layouts.push_back(a2a_layout(*this, plan, c, tf, tk));
    if (layouts.back().end > spec.core.sram.bytes)
      throw InputError(
          op.where, op.name,
          fmt::format("{}: the all-to-all form's rows on core {} need {} KiB of SRAM, the core has {} "
                      "KiB (the form was sized for another layer's routing)",
                      op.name, c, ceil_div(layouts.back().end, 1024), spec.core.sram.bytes / 1024),
          "map this layer alone, or choose the ep or ep-split form (--dataflow does not)");
  }
  // Each route's row on its expert's core: (core, row index).
  std::vector<std::pair<int, int64_t>> placed(static_cast<size_t>(s.tokens * s.top_k), {-1, 0});
  for (int c = 0; c < cores; ++c) {
    const auto& rows = plan.cores[static_cast<size_t>(c)].rows;
    for (size_t i = 0; i < rows.size(); ++i)
      placed[static_cast<size_t>(rows[i].token * s.top_k + rows[i].slot)] = {c, static_cast<int64_t>(i)};
  }
  // Loads cut into row blocks dealt round the load engines (the weights' chunks, the rows), the output rows
  // round the store engines; a buffer's free signalled to each engine of its next load.
  const PassEngines engines = a2a_engines(spec, hb);
  const arch::DmaSpec& dma = spec.core.dma;
  const arch::QueueId pe{arch::QueueKind::pe, 0}, vec{arch::QueueKind::vec, 0}, noc{arch::QueueKind::noc, 0};
  auto dma_queue = [](int engine) { return arch::QueueId{arch::QueueKind::dma, engine}; };
  auto ref = [&](const std::string& name, int core) {
    return arch::SemaphoreRef{program.semaphore_id("a_" + name), core};
  };
  auto here = [&](const std::string& name) { return ref(name, arch::kSameCore); };
  auto wait = [&](const std::string& name, int count = 1) { return arch::SemaphoreWait{here(name), count}; };
  auto on = [&](const char* name, int index, const EngineGroup& group, int engine) {
    return here(engine_semaphore(name, fmt::format("[{}]", index), group, engine));
  };
  // A buffer's free: to each engine of the next load into it (none left: the first engine's, unwaited).
  auto free_signals = [&](const char* name, int index, const std::vector<std::vector<DealtBlock>>& loads,
                          size_t next, arch::Signals& signals) {
    const std::vector<int> next_engines =
        next < loads.size() ? engines_of(loads[next]) : std::vector<int>{engines.loads.first};
    for (int engine : next_engines) signals.push_back(on(name, index, engines.loads, engine));
  };
  auto copy_op = [&](uint64_t from, uint64_t to, int64_t rows, int64_t cols, DType in, int64_t x_pitch) {
    arch::VecOp op;
    op.kind = arch::VectorKind::map;
    op.chain = {arch::VecFn::scale};
    op.dtype = in;
    op.out_dtype = dtype_;
    op.x_address = from;
    op.o_address = to;
    op.rows = rows;
    op.cols = cols;
    op.x_pitch_bytes = x_pitch;
    return op;
  };
  std::vector<std::vector<arch::Instruction>> lists(static_cast<size_t>(cores));
  for (int c = 0; c < cores; ++c) {
    auto& list = lists[static_cast<size_t>(c)];
    const A2aLayout& at = layouts[static_cast<size_t>(c)];
    const A2aPlan::Core& core = plan.cores[static_cast<size_t>(c)];
    const int64_t t0 = c * hb, tokens = c < plan.homes ? std::min(hb, s.tokens - t0) : 0;
    // The weights' chunks in the order the core numbers them (expert, ffn chunk, contraction chunk; expert,
    // ffn chunk, hidden tile), each stream dealt round the load engines on its own, as the rows are.
    std::vector<std::vector<DealtBlock>> w_blocks, wd_blocks;
    {
      EngineDealer w_dealer(engines.loads, dma), wd_dealer(engines.loads, dma);
      for (size_t x = 0; x < core.experts.size(); ++x)
        for (int64_t f = 0; f < s.ffn; f += tf) {
          const int64_t n = std::min(tf, s.ffn - f);
          for (int64_t k0 = 0; k0 < s.hidden; k0 += tk) {
            std::vector<DealtBlock> blocks;
            for (int w = 0; w < nw; ++w) {
              const std::vector<DealtBlock> part = w_dealer.deal(std::min(tk, s.hidden - k0), n * e);
              blocks.insert(blocks.end(), part.begin(), part.end());
            }
            w_blocks.push_back(std::move(blocks));
          }
          for (int64_t h = 0; h < s.hidden; h += tf)
            wd_blocks.push_back(wd_dealer.deal(n, std::min(tf, s.hidden - h) * e));
        }
    }
    EngineDealer rows_dealer(engines.loads, dma);
    int g_stores = 0;
    // Home: its tokens' X rows, their routing (G stored), and each route's row sent to its expert's core.
    if (tokens > 0) {
      const std::vector<DealtBlock> xh_blocks = rows_dealer.deal(tokens, row_bytes);
      for (const DealtBlock& block : xh_blocks) {
        arch::DmaLoad xh;
        xh.source = arch::TensorRegion{t.x, t0 + block.rows.first, block.rows.rows, 0, s.hidden};
        xh.sram_address = at.xh + static_cast<uint64_t>(block.rows.first * row_bytes);
        list.push_back(make_instruction(dma_queue(block.engine), xh, {}, {here("xh_full")}));
      }
      TileJob job;
      job.m = tokens, job.n = s.experts, job.k = s.hidden, job.chunk = tk;
      job.a = moe::Operand{t.x, t0, 0, false};
      job.w.push_back(moe::Operand{t.wr, 0, 0, false});
      job.epilogue = Epilogue::route;
      job.route_row = t0;
      job.out = arch::TensorRegion{t.g, t0, tokens, 0, s.top_k};
      std::vector<size_t> stores;
      JobEmitter(program, list, *this, mapping.dataflow, spec, engines, "ar_")
          .emit({job}, at.router, t.r, stores);
      g_stores = static_cast<int>(stores.size());
      for (size_t i : stores) list[i].signals.push_back(here("g_stored"));
      bool first = true;
      for (int64_t token = t0; token < t0 + tokens; ++token)
        for (int64_t j = 0; j < s.top_k; ++j) {
          const auto [to, row] = placed[static_cast<size_t>(token * s.top_k + j)];
          const uint64_t slot = layouts[static_cast<size_t>(to)].xr + static_cast<uint64_t>(row * row_bytes);
          if (to == c) continue;  // loaded from DRAM by this core as its expert's row, below
          arch::NocSend send;
          send.source_address = at.xh + static_cast<uint64_t>((token - t0) * row_bytes);
          send.rows = 1;
          send.row_bytes = row_bytes;
          send.destination_core = to;
          send.destination_address = slot;
          arch::Waits waits;
          if (first) waits.push_back(wait("xh_full", static_cast<int>(xh_blocks.size())));
          first = false;
          list.push_back(make_instruction(noc, send, waits, {ref("x_in", to)}));
        }
    }
    // Expert: its rows (those of its own tokens from DRAM), then each expert a fused FFN over ffn chunks.
    for (size_t i = 0; i < core.rows.size(); ++i)
      if (plan.home_of(core.rows[i].token) == c) {
        arch::DmaLoad x;
        x.source = arch::TensorRegion{t.x, core.rows[i].token, 1, 0, s.hidden};
        x.sram_address = at.xr + static_cast<uint64_t>(static_cast<int64_t>(i) * row_bytes);
        list.push_back(make_instruction(dma_queue(rows_dealer.deal(1, row_bytes).front().engine), x, {},
                                        {here("x_in")}));
      }
    int64_t chunks = 0, downs = 0, hs = 0;
    bool first_matmul = true;
    for (size_t x = 0; x < core.experts.size(); ++x) {
      const A2aPlan::Expert& expert = core.experts[x];
      const int64_t r = expert.rows;
      const uint64_t a_rows = at.xr + static_cast<uint64_t>(expert.first * row_bytes);
      const int64_t first_chunk = hs, ffn_chunks = ceil_div(s.ffn, tf);
      // Chunk j of the expert's ffn (its H chunk and its accumulators: parity of the core's chunk count).
      auto gate_up = [&](int64_t j) {
        const int64_t f = j * tf, n = std::min(tf, s.ffn - f), chunk = first_chunk + j;
        const int p = static_cast<int>(chunk % 2);
        for (int64_t k0 = 0; k0 < s.hidden; k0 += tk, ++chunks) {
          const int64_t k = std::min(tk, s.hidden - k0);
          const int cb = static_cast<int>(chunks % 2);
          const std::vector<DealtBlock>& blocks = w_blocks[static_cast<size_t>(chunks)];
          std::vector<int> waited;
          for (size_t piece = 0; piece < blocks.size(); ++piece) {
            // The W tensors' blocks one after another: tensor w's are the w-th share of them.
            const int w = static_cast<int>(piece * static_cast<size_t>(nw) / blocks.size());
            const DealtBlock& block = blocks[piece];
            arch::DmaLoad l;
            l.source =
                arch::TensorRegion{w == 0 && nw == 2 ? t.wg : t.wu,
                                   expert.expert * s.hidden + k0 + block.rows.first, block.rows.rows, f, n};
            l.sram_address = at.w[cb][w] + static_cast<uint64_t>(block.rows.first * n * e);
            arch::Waits waits;
            if (chunks >= 2 && std::find(waited.begin(), waited.end(), block.engine) == waited.end()) {
              waits.push_back(arch::SemaphoreWait{on("w_free", cb, engines.loads, block.engine), 1});
              waited.push_back(block.engine);
            }
            list.push_back(
                make_instruction(dma_queue(block.engine), l, waits, {here(fmt::format("w_full[{}]", cb))}));
          }
          for (int w = 0; w < nw; ++w) {
            arch::PeMatmul mm;
            mm.dataflow = mapping.dataflow;
            mm.dtype = dtype_;
            mm.a_address = a_rows + static_cast<uint64_t>(k0 * e);
            mm.a_pitch_bytes = row_bytes;
            mm.w_address = at.w[cb][w];
            mm.o_address = at.acc[p][w];
            mm.m = r, mm.n = n, mm.k = k;
            mm.accumulate = k0 > 0;
            arch::Waits waits;
            if (w == 0) {
              waits.push_back(
                  arch::SemaphoreWait{here(fmt::format("w_full[{}]", cb)), static_cast<int>(blocks.size())});
              if (first_matmul) waits.push_back(wait("x_in", static_cast<int>(core.rows.size())));
              if (k0 == 0 && chunk >= 2) waits.push_back(wait(fmt::format("acc_free[{}]", p)));
            }
            first_matmul = false;
            arch::Signals signals;
            if (w == nw - 1) {
              free_signals("w_free", cb, w_blocks, static_cast<size_t>(chunks + 2), signals);
              if (k0 + k >= s.hidden) signals.push_back(here(fmt::format("acc_full[{}]", p)));
            }
            list.push_back(make_instruction(pe, mm, waits, signals));
          }
        }
        // H chunk = act(gate) * up, in the op's type.
        arch::VecOp act;
        act.kind = arch::VectorKind::map;
        act.dtype = DType::fp32;
        act.out_dtype = dtype_;
        act.x_address = at.acc[p][0];
        act.o_address = at.h[p];
        act.rows = r, act.cols = n;
        if (s.swiglu()) {
          act.chain = {arch::VecFn::swiglu};
          act.y_address = at.acc[p][1];
        } else {
          act.chain = {arch::VecFn::gelu};
        }
        arch::Waits act_waits = {wait(fmt::format("acc_full[{}]", p))};
        if (chunk >= 2) act_waits.push_back(wait(fmt::format("h_free[{}]", p)));
        list.push_back(make_instruction(
            vec, act, act_waits, {here(fmt::format("acc_free[{}]", p)), here(fmt::format("h_full[{}]", p))}));
      };
      // The H chunk's part of every hidden tile of Y.
      auto down = [&](int64_t j) {
        const int64_t f = j * tf, n = std::min(tf, s.ffn - f), chunk = first_chunk + j;
        const int p = static_cast<int>(chunk % 2);
        for (int64_t h = 0; h < s.hidden; h += tf, ++downs) {
          const int64_t cols = std::min(tf, s.hidden - h);
          const int db = static_cast<int>(downs % 2);
          const std::vector<DealtBlock>& blocks = wd_blocks[static_cast<size_t>(downs)];
          std::vector<int> waited;
          for (const DealtBlock& block : blocks) {
            arch::DmaLoad l;
            l.source = arch::TensorRegion{t.wd, expert.expert * s.ffn + f + block.rows.first, block.rows.rows,
                                          h, cols};
            l.sram_address = at.wd[db] + static_cast<uint64_t>(block.rows.first * cols * e);
            arch::Waits waits;
            if (downs >= 2 && std::find(waited.begin(), waited.end(), block.engine) == waited.end()) {
              waits.push_back(arch::SemaphoreWait{on("wd_free", db, engines.loads, block.engine), 1});
              waited.push_back(block.engine);
            }
            list.push_back(
                make_instruction(dma_queue(block.engine), l, waits, {here(fmt::format("wd_full[{}]", db))}));
          }
          arch::PeMatmul mm;
          mm.dataflow = mapping.dataflow;
          mm.dtype = dtype_;
          mm.a_address = at.h[p];
          mm.w_address = at.wd[db];
          mm.o_address = at.yacc + static_cast<uint64_t>(h * 4);
          mm.o_pitch_bytes = s.hidden * 4;
          mm.m = r, mm.n = cols, mm.k = n;
          mm.accumulate = f > 0;
          arch::Waits waits2 = {wait(fmt::format("wd_full[{}]", db), static_cast<int>(blocks.size()))};
          if (h == 0) waits2.push_back(wait(fmt::format("h_full[{}]", p)));
          if (f == 0 && h == 0 && x > 0) waits2.push_back(wait("yacc_free"));
          arch::Signals signals;
          free_signals("wd_free", db, wd_blocks, static_cast<size_t>(downs + 2), signals);
          if (h + cols >= s.hidden) signals.push_back(here(fmt::format("h_free[{}]", p)));
          if (h + cols >= s.hidden && f + n >= s.ffn) signals.push_back(here("y_done"));
          list.push_back(make_instruction(pe, mm, waits2, signals));
        }
      };
      // Software-pipelined: chunk j + 1's gate/up GEMMs run on the PE array while the vector unit activates
      // chunk j, then chunk j's down GEMMs.
      gate_up(0);
      for (int64_t j = 0; j < ffn_chunks; ++j) {
        if (j + 1 < ffn_chunks) gate_up(j + 1);
        down(j);
      }
      hs += ffn_chunks;
      // Y rounded to the op's type beside the expert's rows, then each row to its slot on its home core.
      bool remote = false, local = false;
      for (int64_t i = 0; i < r; ++i)
        (plan.home_of(core.rows[static_cast<size_t>(expert.first + i)].token) == c ? local : remote) = true;
      arch::Signals rounded = {here("yacc_free")};
      if (remote) rounded.push_back(here("y_noc"));
      if (local) rounded.push_back(here("y_vec"));
      list.push_back(
          make_instruction(vec,
                           copy_op(at.yacc, at.yb + static_cast<uint64_t>(expert.first * row_bytes), r,
                                   s.hidden, DType::fp32, 0),
                           {wait("y_done")}, rounded));
      bool first_send = true, first_copy = true;
      for (int64_t i = 0; i < r; ++i) {
        const A2aPlan::Row& row = core.rows[static_cast<size_t>(expert.first + i)];
        const int home = plan.home_of(row.token);
        const uint64_t from = at.yb + static_cast<uint64_t>((expert.first + i) * row_bytes);
        const uint64_t slot =
            layouts[static_cast<size_t>(home)].slots +
            static_cast<uint64_t>(((row.token - home * hb) * s.top_k + row.slot) * row_bytes);
        if (home != c) {
          arch::NocSend send;
          send.source_address = from;
          send.rows = 1;
          send.row_bytes = row_bytes;
          send.destination_core = home;
          send.destination_address = slot;
          arch::Waits waits;
          if (first_send) waits.push_back(wait("y_noc"));
          first_send = false;
          list.push_back(make_instruction(noc, send, waits, {ref("y_in", home)}));
        } else {
          arch::Waits waits;
          if (first_copy) waits.push_back(wait("y_vec"));
          first_copy = false;
          list.push_back(
              make_instruction(vec, copy_op(from, slot, 1, s.hidden, dtype_, 0), waits, {here("y_in")}));
        }
      }
    }
    // Home: the combine, once every route's row is in its slot.
    if (tokens > 0) {
      // G, a few bytes a token: whole, on the first load engine.
      arch::DmaLoad g;
      g.source = arch::TensorRegion{t.g, t0, tokens, 0, s.top_k};
      g.sram_address = at.g;
      list.push_back(make_instruction(dma_queue(engines.loads.first), g, {wait("g_stored", g_stores)},
                                      {here("g_full")}));
      arch::VecOp sum;
      sum.kind = arch::VectorKind::weighted_sum;
      sum.dtype = dtype_;
      sum.out_dtype = dtype_;
      sum.x_address = at.slots;
      sum.g_address = at.g;
      sum.o_address = at.out;
      sum.rows = tokens;
      sum.cols = s.hidden;
      sum.parts = s.top_k;
      const std::vector<DealtBlock> out_blocks = EngineDealer(engines.stores, dma).deal(tokens, row_bytes);
      arch::Signals full;
      for (int engine : engines_of(out_blocks))
        full.push_back(here(engine_semaphore("out_full", "", engines.stores, engine)));
      list.push_back(make_instruction(
          vec, sum, {wait("g_full"), wait("y_in", static_cast<int>(tokens * s.top_k))}, full));
      for (const DealtBlock& block : out_blocks) {
        arch::DmaStore o;
        o.sram_address = at.out + static_cast<uint64_t>(block.rows.first * row_bytes);
        o.destination = arch::TensorRegion{o_tensor, t0 + block.rows.first, block.rows.rows, 0, s.hidden};
        list.push_back(
            make_instruction(dma_queue(block.engine), o,
                             {wait(engine_semaphore("out_full", "", engines.stores, block.engine))}, {}));
      }
    }
  }
  finish_program(program, lists, spec);
  return program;
}

}  // namespace tessera::mapper
