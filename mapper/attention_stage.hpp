// Attention as a stage graph (issue "Attention"), flash-style: per block of Q rows kept in SRAM, K/V tiles
// stream through; per tile S = Q K^T on the PE array (K's rows as W transposed), the online softmax on the
// vector unit (running max, sum and correction per row, P in the matmul's type), the accumulator rescaled by
// the correction, O += P V on the PE array; after the last tile O = accumulator / sum is stored. S and P
// never leave SRAM. Two S and two P buffers let the next tile's Q K^T run under this tile's softmax; K and V
// are double-buffered. A core takes whole Q blocks: the q heads of one kv head stacked (GQA: a decode step's
// G heads share every K/V tile), or, causal with several queries, one head's rows (the mask is a shift per
// row). Causal tiles past a block's last visible key are skipped; the diagonal ones masked. Paged and bshd
// caches load each tile as the runs of rows the block table and the order give (a DMA descriptor a run).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arch/isa/pe_matmul.hpp"
#include "arch/isa/vec_op.hpp"
#include "mapper/attention_program.hpp"
#include "mapper/stage_graph.hpp"
#include "ops/kinds/attention.hpp"

namespace tessera::mapper {

class AttentionStage final : public StageGraph {
 public:
  // nullptr for an op that is not attention.
  static std::shared_ptr<const AttentionStage> of(const ops::Op& op);

  const char* kind() const override { return "attention"; }
  SearchResult search(const std::shared_ptr<const StageGraph>& self, const arch::ArchSpec& spec,
                      const SearchOptions& options) const override;
  Cost evaluate(const Mapping& mapping, const arch::ArchSpec& spec) const override;
  arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec,
                      const std::string& program_name) const override;
  std::string label(const Mapping& mapping) const override;
  std::string describe(const Mapping& mapping) const override;

  // A block of Q rows one core computes: rows [first_row, first_row + rows) of Q (and O), of batch b and kv
  // head g; `query` is the query position of its first row when the rows are one head's (causal), else 0.
  struct QBlock {
    int64_t b = 0, g = 0, first_row = 0, rows = 0, query = 0;
  };
  std::vector<QBlock> q_blocks(int64_t block_rows) const;
  // The K/V tiles a block reads: [0, keys) in tiles of `block_cols`; keys past the block's last visible one
  // are skipped (causal).
  int64_t keys_seen(const QBlock& block) const;
  // Row i of `block` sees a tile starting at key k0 through column i + shift (causal), or all of it.
  bool tile_masked(const QBlock& block, int64_t k0, int64_t cols) const;
  int64_t causal_shift(const QBlock& block, int64_t k0) const;

  // The multicast form: the blocks that share K/V (one batch and kv head) spread over the cores, two a core
  // (the heaviest with the lightest, so that a causal head's work is even), each K/V tile loaded once by the
  // first core and multicast to the cores whose blocks see it. slots[c] are core c's blocks (indices into
  // q_blocks) of one stream; empty when the stream has more blocks than two a core.
  struct Stream {
    std::vector<std::vector<size_t>> slots;  // per core, at most two blocks
    int64_t keys = 0;                        // keys its heaviest block sees: what the stream loads
    int64_t tiles = 0;                       // K/V tiles over them
  };
  std::vector<Stream> streams(int64_t block_rows, int64_t block_cols, int cores) const;

  // The split-KV form (flash-split, flash-decoding): where the blocks are fewer than the cores, each block's
  // keys [0, keys_seen) split into `splits` contiguous ranges of whole K/V tiles, a range a core. Each core
  // runs the flash loop over its range; all but the block's first send their un-normalised accumulator and
  // statistics over the NoC to the core of the first, which merges them (vec merge_partials) and stores O.
  // Part i * splits + s (block i, range s: keys [begin, end)) runs on core i * splits + s.
  struct SplitPart {
    size_t block = 0;
    int64_t split = 0, begin = 0, end = 0;
    int core = 0, merging_core = 0;
  };
  std::vector<SplitPart> split_parts(int64_t block_rows, int64_t block_cols, int64_t splits) const;
  // The split counts searched for blocks of block_rows x block_cols on `cores` cores: decode only (a few
  // queries), 2, 4, 8, ... and the most that fit, with every range at least one tile and a core each.
  std::vector<int64_t> split_choices(int64_t block_rows, int64_t block_cols, int cores) const;

  const ops::AttentionShape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }

 private:
  ops::AttentionShape shape_;
  // The cycles of one K/V tile's step of a block (the pipeline runs at its slowest stage): both matmuls on
  // the PE array, the softmax and the rescale on the vector unit, the tile's loads on a DMA engine; and of
  // the block's Q load, its final rescale and its store.
  struct FlashStep {
    int64_t pe = 0, vec = 0, load = 0, q_load = 0, finish = 0, store = 0;
  };
  FlashStep flash_step(const Mapping& mapping, const arch::ArchSpec& spec, const QBlock& block) const;
  // Per core of a mapping: its cycles, and the busy cycles of its PE array, vector unit, DMA engines and NoC
  // port.
  struct CoreCycles {
    explicit CoreCycles(int cores)
        : cycles(static_cast<size_t>(cores), 0), pe(cycles), vec(cycles), dma(cycles), noc(cycles) {}
    std::vector<int64_t> cycles, pe, vec, dma, noc;
    // `tiles` steps of a block and its Q load (the tiles' loads too where the core streams them itself).
    void add_tiles(size_t core, const FlashStep& step, int64_t tiles, bool loads_its_tiles);
  };
  // The cost of a mapping whose cores do `work`: DRAM bytes of Q (and of Q blocks loaded again by other
  // cores, `q_reload_bytes`), K and V (`kv_bytes`) and O, and partial results reduced over the NoC.
  Cost finish_cost(const arch::ArchSpec& spec, const CoreCycles& work, int64_t kv_bytes,
                   int64_t q_reload_bytes, int64_t reduction_bytes) const;
  // One core's flash loop over `tiles` (the ranges of its blocks, in order): the Q and K/V loads on DMA
  // engine 0, S and P V on the PE array, the online softmax and the accumulator's rescales on the vector
  // unit; after a block's last tile t, finish_block(t) appends what ends the block (after a wait on the
  // signal of its last P V, `last_pv_signal`: pv_done for a vector instruction, in order after the others'
  // waits on it; another name for another queue): the final normalisation and the store, or the split form's
  // sends or merge.
  void append_flash_core(std::vector<arch::Instruction>& list, arch::Program& program,
                         const attention::ProgramTensors& tensors, const attention::Buffers& buffers,
                         arch::Dataflow dataflow, const std::vector<QBlock>& blocks,
                         const std::vector<attention::FlashTile>& tiles,
                         const std::function<void(size_t)>& finish_block,
                         const std::string& last_pv_signal = "pv_done") const;
  // The tiles of keys [begin, end) of blocks[block], appended to `tiles`.
  void append_flash_tiles(const attention::ProgramTensors& tensors, const std::vector<QBlock>& blocks,
                          size_t block, int64_t begin, int64_t end, int64_t cols,
                          std::vector<attention::FlashTile>& tiles) const;
  arch::PeMatmul matmul_op(arch::Dataflow dataflow, uint64_t a_address, uint64_t w_address,
                           uint64_t o_address, int64_t m, int64_t n, int64_t k) const;
  // A K/V tile's online softmax step of `block` (S at s, P to p), and the accumulator's rescale by the step's
  // correction (in place) or, `final`, by 1/sum into `out`.
  arch::VecOp softmax_op(const QBlock& block, int64_t k0, int64_t cols, bool first, uint64_t s, uint64_t p,
                         uint64_t statistics) const;
  arch::VecOp scale_op(const QBlock& block, uint64_t accumulator, uint64_t out, uint64_t statistics,
                       bool final) const;
  arch::Program lower_multicast(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                const arch::ArchSpec& spec, const std::string& program_name) const;
  // The split-KV form's (mapper/attention_split.cpp).
  arch::Program lower_split(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                            const arch::ArchSpec& spec, const std::string& program_name) const;
  Cost evaluate_split(const Mapping& mapping, const arch::ArchSpec& spec) const;
  std::string describe_split(const Mapping& mapping) const;
  // The merge of a block's `parts` partial results stacked at `partials` (accumulators) and `statistics`.
  arch::VecOp merge_op(const QBlock& block, uint64_t partials, uint64_t statistics, uint64_t out,
                       int64_t parts) const;
  // The bytes one range's partial result sends to the merging core: the fp32 accumulator and statistics.
  int64_t partial_bytes(const QBlock& block) const;
  DType dtype_ = DType::bf16;
  bool masked_ = false;  // causal with more than one query: each row its own shift
};

}  // namespace tessera::mapper
