// What the MoE placements' lowerings share (mapper/moe/program.cpp: ep and ep-split; program_a2a.cpp:
// all-to-all): the GEMM tile jobs' emitter, the program's start and finish.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arch/isa/noc_send.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vec_route.hpp"
#include "common/integer_math.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/moe/plan.hpp"
#include "mapper/moe/stage.hpp"

namespace tessera::mapper::moe {

// Emits a core's GEMM tile jobs with double-buffered operand chunks and accumulators, the loads cut into row
// blocks dealt round the load engines and the stores round the store engines (mapper/kit/dma_engines.hpp), a
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
                    const arch::ArchSpec& spec);

// An intermediate the program writes and reads back (at least one row).
arch::TensorDecl intermediate_tensor(const char* name, DType dtype, int64_t rows, int64_t cols);

// The program's start: the op line, the op's inputs as it declares them (not P: the host's routing follows
// the forced deal), R (each token's chosen experts, by falling weight: the routing's, for vec route) and G
// (the gate weights vec route writes); `output` is O's declaration, for the caller to add last (the tensor
// the numerics check reads).
Tensors start_moe_program(arch::Program& program, const std::string& name, const ops::Op& op, uint64_t seed,
                          const arch::ArchSpec& spec, const ops::MoeRouting& routing,
                          arch::TensorDecl& output);

}  // namespace tessera::mapper::moe
