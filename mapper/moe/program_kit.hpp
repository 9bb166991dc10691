// What the MoE placements' lowerings share (mapper/moe/program.cpp: ep and ep-split; program_a2a.cpp:
// all-to-all), defined in program_kit.cpp: the GEMM tile jobs' emitter, the program's start and finish.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arch/isa/program.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
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
             std::string prefix);

  void emit(const std::vector<TileJob>& jobs, const GemmBuffers& buffers, int route_tensor,
            std::vector<size_t>& stores);

 private:
  // The blocks of one contraction chunk's A and W loads.
  struct ChunkBlocks {
    std::vector<DealtBlock> a, w;  // w: the W tensors' blocks one after another
    std::vector<int> w_blocks;     // per W tensor
    std::vector<char> a_waits_go;  // per A block: the first of its row block of H on its engine
    std::vector<int> go_to;        // the engines this chunk's A load (a row block's first) lets go
  };
  // Every chunk's load blocks (in the order the jobs' chunks come) and every job's store blocks.
  struct Dealt {
    std::vector<ChunkBlocks> chunks;
    std::vector<std::vector<DealtBlock>> stores;
  };
  // One contraction chunk of a job: columns [k0, k0 + k) of A, into operand buffer `buffer`.
  struct Chunk {
    int64_t k0 = 0, k = 0;
    int buffer = 0;
    const ChunkBlocks* blocks = nullptr;
  };

  Dealt deal(const std::vector<TileJob>& jobs) const;
  // How many instructions `emit` adds for `jobs`.
  size_t instructions_of(const std::vector<TileJob>& jobs, const Dealt& dealt) const;
  void emit_route_load(const TileJob& job, const GemmBuffers& buffers, int route_tensor);
  void emit_a_loads(const TileJob& job, const Chunk& chunk, const GemmBuffers& buffers);
  void emit_w_loads(const TileJob& job, const Chunk& chunk, const GemmBuffers& buffers);
  void emit_matmuls(const TileJob& job, size_t index, const Chunk& chunk, const GemmBuffers& buffers,
                    const Dealt& dealt);
  void emit_epilogue(const TileJob& job, size_t index, const GemmBuffers& buffers, const Dealt& dealt);
  void emit_stores(const TileJob& job, size_t index, const GemmBuffers& buffers, const Dealt& dealt,
                   std::vector<size_t>& stores);
  // The engines of chunk `chunk`'s A (or W) loads (none left: the first load engine).
  std::vector<int> load_engines(const Dealt& dealt, size_t chunk, bool a) const;

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
  std::string text_of(const char* name, int slot) const;
  int handle(const char* name, int slot);
  arch::SemaphoreRef plain_slot(const char* name, int slot);
  // The stores of a row block of H (its first row `row` of `tensor`) signal h_stored, which the row block's
  // first down job waits for, once per store block. With one store engine the stores complete in queue order
  // and one counter serves every row block; with several, the next row block's blocks could land before this
  // one's last: one counter for even row blocks and one for odd (the one after next is stored only after this
  // one's down job has started).
  std::string h_stored_name(int tensor, int64_t row);
  arch::SemaphoreWait h_stored_wait(const TileJob& job);

  arch::Program& program_;
  std::vector<arch::Instruction>& list_;
  const MoeStage& stage_;
  arch::Dataflow dataflow_;
  std::string prefix_;
  arch::DmaSpec dma_;
  PassEngines engines_;
  Semaphores semaphores_{program_, prefix_};
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

// Whether `engine` is not yet in `waited`, and then adds it: the first of a buffer's loads on each engine
// waits for the buffer's free (one signal an engine), the others follow in queue order.
bool first_on(std::vector<int>& waited, int engine);

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
