#include "mapper/moe/program_kit.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/isa/vec_op.hpp"
#include "arch/isa/vec_route.hpp"
#include "common/error.hpp"
#include "mapper/kit/program_header.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper::moe {

JobEmitter::JobEmitter(arch::Program& program, std::vector<arch::Instruction>& list, const MoeStage& stage,
                       arch::Dataflow dataflow, const arch::ArchSpec& spec, const PassEngines& engines,
                       std::string prefix)
    : program_(program),
      list_(list),
      stage_(stage),
      dataflow_(dataflow),
      prefix_(std::move(prefix)),
      dma_(spec.core.dma),
      engines_(engines) {}

void JobEmitter::emit(const std::vector<TileJob>& jobs, const GemmBuffers& buffers, int route_tensor,
                      std::vector<size_t>& stores) {
  const Dealt dealt = deal(jobs);
  // The list grows by exactly this much: reserved, so that a lowering of millions of instructions neither
  // copies them as the list doubles nor faults in pages it then leaves.
  const size_t expected = list_.size() + instructions_of(jobs, dealt);
  list_.reserve(expected);
  for (size_t index = 0; index < jobs.size(); ++index) {
    const TileJob& job = jobs[index];
    if (job.epilogue == Epilogue::route) emit_route_load(job, buffers, route_tensor);
    for (int64_t k0 = 0; k0 < job.k; k0 += job.chunk, ++chunks_) {
      const Chunk chunk{k0, std::min(job.chunk, job.k - k0), static_cast<int>(chunks_ % 2),
                        &dealt.chunks[static_cast<size_t>(chunks_)]};
      emit_a_loads(job, chunk, buffers);
      emit_w_loads(job, chunk, buffers);
      emit_matmuls(job, index, chunk, buffers, dealt);
    }
    emit_epilogue(job, index, buffers, dealt);
    emit_stores(job, index, buffers, dealt, stores);
  }
  TESSERA_ASSERT(list_.size() == expected, "a job list's instructions are counted before they are emitted");
}

// The blocks of every chunk's A and W loads and of every job's store, dealt in queue order. A row block of H
// is read only once it is stored: its first down job's first A load, whole on the first load engine (the only
// one that waits for h_stored: an engine that took another's signal could read rows not yet stored), lets
// each other engine that carries its H rows go (`h_go`, per engine), and the first of those blocks on each
// waits for it; later ones follow in queue order.
JobEmitter::Dealt JobEmitter::deal(const std::vector<TileJob>& jobs) const {
  const ops::MoeShape& shape = stage_.shape();
  const int64_t element = size_bytes(stage_.dtype());
  Dealt dealt;
  EngineDealer loads(engines_.loads, dma_), out(engines_.stores, dma_);
  std::vector<int> h_tensors;  // the tensors the jobs so far store H into
  // Per row block of H (tensor, first row): the chunk whose A load waits for it stored, the engines that
  // carry its rows so far.
  std::map<std::pair<int, int64_t>, std::pair<size_t, std::vector<int>>> h_reads;
  for (const TileJob& job : jobs) {
    const bool reads_h = std::find(h_tensors.begin(), h_tensors.end(), job.a.tensor) != h_tensors.end();
    TESSERA_ASSERT(reads_h || job.h_waits == 0, "a job that waits for H reads H");
    for (int64_t k0 = 0; k0 < job.k; k0 += job.chunk) {
      const int64_t k = std::min(job.chunk, job.k - k0);
      const bool waits_h = k0 == 0 && job.h_waits > 0;
      ChunkBlocks chunk;
      if (reads_h && waits_h) {
        chunk.a = {DealtBlock{RowBlock{0, job.m}, engines_.loads.first}};
        h_reads[{job.a.tensor, job.a.row}] = {dealt.chunks.size(), {engines_.loads.first}};
      } else {
        chunk.a = loads.deal(job.m, k * element);
      }
      chunk.a_waits_go.assign(chunk.a.size(), 0);
      if (reads_h && !waits_h) {
        const auto found = h_reads.find({job.a.tensor, job.a.row});
        TESSERA_ASSERT(found != h_reads.end(), "a row block of H is first read by the job that waits for it");
        std::vector<int>& seen = found->second.second;
        for (size_t i = 0; i < chunk.a.size(); ++i)
          if (first_on(seen, chunk.a[i].engine)) {
            chunk.a_waits_go[i] = 1;
            dealt.chunks[found->second.first].go_to.push_back(chunk.a[i].engine);
          }
      }
      for (size_t i = 0; i < job.w.size(); ++i) {
        const std::vector<DealtBlock> w = loads.deal(k, job.n * element);
        chunk.w.insert(chunk.w.end(), w.begin(), w.end());
        chunk.w_blocks.push_back(static_cast<int>(w.size()));
      }
      dealt.chunks.push_back(std::move(chunk));
    }
    dealt.stores.push_back(job.epilogue == Epilogue::route ? out.deal(job.m, shape.top_k * 4)
                                                           : out.deal(job.m, job.n * element));
    if (job.stores_h && std::find(h_tensors.begin(), h_tensors.end(), job.out.tensor) == h_tensors.end())
      h_tensors.push_back(job.out.tensor);
  }
  return dealt;
}

size_t JobEmitter::instructions_of(const std::vector<TileJob>& jobs, const Dealt& dealt) const {
  size_t count = 0;
  for (const ChunkBlocks& chunk : dealt.chunks) count += chunk.a.size() + chunk.w.size();
  for (size_t index = 0; index < jobs.size(); ++index) {
    const TileJob& job = jobs[index];
    const auto chunks = static_cast<size_t>((job.k + job.chunk - 1) / job.chunk);
    count +=
        chunks * job.w.size() + 1 + dealt.stores[index].size() + (job.epilogue == Epilogue::route ? 1 : 0);
  }
  return count;
}

// The block's chosen experts, beside its logits (a few bytes a row: whole, on the first engine).
void JobEmitter::emit_route_load(const TileJob& job, const GemmBuffers& buffers, int route_tensor) {
  arch::DmaLoad load;
  load.source = arch::TensorRegion{route_tensor, job.route_row, job.m, 0, stage_.shape().top_k};
  load.sram_address = buffers.r;
  arch::Waits waits;
  if (routes_ > 0) waits.push_back(arch::SemaphoreWait{plain("r_free"), 1});
  list_.push_back(make_instruction(dma_queue(engines_.loads.first), load, waits, {plain("r_full")}));
  ++routes_;
}

void JobEmitter::emit_a_loads(const TileJob& job, const Chunk& chunk, const GemmBuffers& buffers) {
  const int64_t element = size_bytes(stage_.dtype());
  const ChunkBlocks& blocks = *chunk.blocks;
  std::vector<int> waited;
  for (size_t piece = 0; piece < blocks.a.size(); ++piece) {
    const DealtBlock& block = blocks.a[piece];
    arch::DmaLoad load;
    load.source = arch::TensorRegion{job.a.tensor, job.a.row + block.rows.first, block.rows.rows,
                                     job.a.col + chunk.k0, chunk.k};
    load.sram_address = buffers.a[chunk.buffer] + static_cast<uint64_t>(block.rows.first * chunk.k * element);
    arch::Waits waits;
    if (chunks_ >= 2 && first_on(waited, block.engine))
      waits.push_back(arch::SemaphoreWait{indexed("a_free", chunk.buffer, engines_.loads, block.engine), 1});
    if (chunk.k0 == 0 && job.h_waits > 0) waits.push_back(h_stored_wait(job));
    if (blocks.a_waits_go[piece])
      waits.push_back(arch::SemaphoreWait{plain("h_go", engines_.loads, block.engine), 1});
    arch::Signals signals = {indexed("a_full", chunk.buffer)};
    for (int engine : blocks.go_to) signals.push_back(plain("h_go", engines_.loads, engine));
    list_.push_back(make_instruction(dma_queue(block.engine), load, waits, signals));
  }
}

void JobEmitter::emit_w_loads(const TileJob& job, const Chunk& chunk, const GemmBuffers& buffers) {
  const int64_t element = size_bytes(stage_.dtype());
  const ChunkBlocks& blocks = *chunk.blocks;
  std::vector<int> waited;
  size_t w_block = 0;
  for (size_t tensor = 0; tensor < job.w.size(); ++tensor)
    for (int j = 0; j < blocks.w_blocks[tensor]; ++j, ++w_block) {
      const DealtBlock& block = blocks.w[w_block];
      const moe::Operand& w = job.w[tensor];
      arch::DmaLoad load;
      load.source =
          arch::TensorRegion{w.tensor, w.row + chunk.k0 + block.rows.first, block.rows.rows, w.col, job.n};
      load.sram_address =
          buffers.w[chunk.buffer][tensor] + static_cast<uint64_t>(block.rows.first * job.n * element);
      arch::Waits waits;
      if (chunks_ >= 2 && first_on(waited, block.engine))
        waits.push_back(
            arch::SemaphoreWait{indexed("w_free", chunk.buffer, engines_.loads, block.engine), 1});
      list_.push_back(
          make_instruction(dma_queue(block.engine), load, waits, {indexed("w_full", chunk.buffer)}));
    }
}

// One GEMM a W tensor over the chunk, into the job's accumulators; the last frees the chunk's buffers for the
// loads two chunks on.
void JobEmitter::emit_matmuls(const TileJob& job, size_t index, const Chunk& chunk,
                              const GemmBuffers& buffers, const Dealt& dealt) {
  const int tensors = static_cast<int>(job.w.size());
  const int accumulators = static_cast<int>(index % 2);
  const int buffer = chunk.buffer;
  for (int i = 0; i < tensors; ++i) {
    arch::PeMatmul mm;
    mm.dataflow = dataflow_;
    mm.dtype = stage_.dtype();
    mm.a_address = buffers.a[buffer];
    mm.w_address = buffers.w[buffer][i];
    mm.o_address = buffers.acc[accumulators][i];
    mm.m = job.m, mm.n = job.n, mm.k = chunk.k;
    mm.accumulate = chunk.k0 > 0;
    arch::Waits waits;
    if (i == 0) {
      waits.push_back(
          arch::SemaphoreWait{indexed("a_full", buffer), static_cast<int>(chunk.blocks->a.size())});
      waits.push_back(
          arch::SemaphoreWait{indexed("w_full", buffer), static_cast<int>(chunk.blocks->w.size())});
      if (chunk.k0 == 0 && index >= 2)
        waits.push_back(arch::SemaphoreWait{indexed("acc_free", accumulators), 1});
    }
    arch::Signals signals;
    if (i == tensors - 1) {
      const auto next = static_cast<size_t>(chunks_ + 2);
      for (int engine : load_engines(dealt, next, true))
        signals.push_back(indexed("a_free", buffer, engines_.loads, engine));
      for (int engine : load_engines(dealt, next, false))
        signals.push_back(indexed("w_free", buffer, engines_.loads, engine));
      if (chunk.k0 + chunk.k >= job.k) signals.push_back(indexed("acc_full", accumulators));
    }
    list_.push_back(make_instruction(pe_queue(), mm, waits, signals));
  }
}

// The epilogue: the accumulators become the stored tile (the router's: its block's routing).
void JobEmitter::emit_epilogue(const TileJob& job, size_t index, const GemmBuffers& buffers,
                               const Dealt& dealt) {
  const int tile_buffer = static_cast<int>(index % 2);
  arch::Waits waits = {arch::SemaphoreWait{indexed("acc_full", tile_buffer), 1}};
  if (index >= 2)
    waits.push_back(arch::SemaphoreWait{indexed("out_free", tile_buffer),
                                        static_cast<int>(dealt.stores[index - 2].size())});
  arch::Signals signals = {indexed("acc_free", tile_buffer)};
  for (int engine : engines_of(dealt.stores[index]))
    signals.push_back(indexed("out_full", tile_buffer, engines_.stores, engine));
  if (job.epilogue == Epilogue::route) {
    waits.push_back(arch::SemaphoreWait{plain("r_full"), 1});
    signals.push_back(plain("r_free"));
    arch::VecRoute route = stage_.route_op(job.m);
    route.x_address = buffers.acc[tile_buffer][0];
    route.i_address = buffers.r;
    route.o_address = buffers.out[tile_buffer];
    list_.push_back(make_instruction(vec_queue(), route, waits, signals));
    return;
  }
  arch::VecOp op;
  op.kind = arch::VectorKind::map;
  op.dtype = DType::fp32;
  op.out_dtype = stage_.dtype();
  op.x_address = buffers.acc[tile_buffer][0];
  op.o_address = buffers.out[tile_buffer];
  op.rows = job.m;
  op.cols = job.n;
  if (job.epilogue == Epilogue::round) {
    op.chain = {arch::VecFn::scale};
  } else if (stage_.shape().swiglu()) {
    op.chain = {arch::VecFn::swiglu};
    op.y_address = buffers.acc[tile_buffer][1];
  } else {
    op.chain = {arch::VecFn::gelu};
  }
  list_.push_back(make_instruction(vec_queue(), op, waits, signals));
}

void JobEmitter::emit_stores(const TileJob& job, size_t index, const GemmBuffers& buffers, const Dealt& dealt,
                             std::vector<size_t>& stores) {
  const int tile_buffer = static_cast<int>(index % 2);
  const int64_t row_bytes =
      job.epilogue == Epilogue::route ? stage_.shape().top_k * 4 : job.n * size_bytes(stage_.dtype());
  const std::vector<DealtBlock>& stored_in = dealt.stores[index];
  for (const DealtBlock& block : stored_in) {
    arch::DmaStore store;
    store.sram_address = buffers.out[tile_buffer] + static_cast<uint64_t>(block.rows.first * row_bytes);
    store.destination = job.out;
    store.destination.row += block.rows.first;
    store.destination.rows = block.rows.rows;
    arch::Signals stored = {indexed("out_free", tile_buffer)};
    if (job.stores_h) stored.push_back(semaphores_.here(h_stored_name(job.out.tensor, job.out.row)));
    stores.push_back(list_.size());
    list_.push_back(make_instruction(
        dma_queue(block.engine), store,
        {arch::SemaphoreWait{indexed("out_full", tile_buffer, engines_.stores, block.engine), 1}}, stored));
  }
  if (job.stores_h) h_blocks_[{job.out.tensor, job.out.row}] += static_cast<int>(stored_in.size());
}

std::vector<int> JobEmitter::load_engines(const Dealt& dealt, size_t chunk, bool a) const {
  if (chunk >= dealt.chunks.size()) return std::vector<int>{engines_.loads.first};
  return engines_of(a ? dealt.chunks[chunk].a : dealt.chunks[chunk].w);
}

std::string JobEmitter::text_of(const char* name, int slot) const {
  return prefix_ + engine_semaphore(name, "", EngineGroup{0, slot + 1}, slot);
}

int JobEmitter::handle(const char* name, int slot) {
  for (const Named& named : handles_)
    if (named.name == name && named.slot == slot) return named.value;
  handles_.push_back(Named{name, slot, ids_.name(text_of(name, slot))});
  return handles_.back().value;
}

arch::SemaphoreRef JobEmitter::plain_slot(const char* name, int slot) {
  for (const Named& named : plain_ids_)
    if (named.name == name && named.slot == slot) return arch::SemaphoreRef{named.value, arch::kSameCore};
  plain_ids_.push_back(Named{name, slot, program_.semaphore_id(text_of(name, slot))});
  return arch::SemaphoreRef{plain_ids_.back().value, arch::kSameCore};
}

std::string JobEmitter::h_stored_name(int tensor, int64_t row) {
  if (engines_.stores.count == 1) return "h_stored";
  auto found = std::find(h_rows_.begin(), h_rows_.end(), std::make_pair(tensor, row));
  if (found == h_rows_.end()) found = h_rows_.insert(h_rows_.end(), std::make_pair(tensor, row));
  return fmt::format("h_stored[{}]", (found - h_rows_.begin()) % 2);
}

arch::SemaphoreWait JobEmitter::h_stored_wait(const TileJob& job) {
  const auto found = h_blocks_.find({job.a.tensor, job.a.row});
  TESSERA_ASSERT(found != h_blocks_.end() && job.h_waits > 0, "a down job's H rows are stored before it");
  return semaphores_.wait(h_stored_name(job.a.tensor, job.a.row), found->second);
}

bool first_on(std::vector<int>& waited, int engine) {
  if (std::find(waited.begin(), waited.end(), engine) != waited.end()) return false;
  waited.push_back(engine);
  return true;
}

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
  r.fill = arch::ValuesFill{std::move(values)};
  t.r = add_tensor(program, r);
  t.g = add_tensor(program, intermediate_tensor("G", DType::fp32, s.tokens, s.top_k));
  return t;
}

}  // namespace tessera::mapper::moe
