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
#include <memory>
#include <string>
#include <vector>

#include "arch/isa/pe_matmul.hpp"
#include "arch/isa/vec_op.hpp"
#include "mapper/stage_graph.hpp"
#include "ops/kinds/attention.hpp"

namespace tessera::mapper {

class AttentionStage final : public StageGraph {
 public:
  // nullptr for an op that is not attention.
  static std::shared_ptr<const AttentionStage> of(const ops::Op& op);

  // What GraphTiling's values mean for attention: rows of a Q block, keys of a K/V tile, cores, the form, and
  // (naive) rows of a softmax pass's chunk, (flash-mc) K/V tile buffers (0: two).
  enum TilingValue : size_t { kBlockRows, kBlockCols, kCores, kForm, kSoftmaxRows, kKvBuffers };
  // flash: each core streams its blocks' K/V tiles; flash_mc: K/V loaded once and multicast; naive: S and P
  // through DRAM (mapper/attention_naive.hpp).
  enum Form : int64_t { flash = 0, flash_mc = 1, naive = 2 };

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

  const ops::AttentionShape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  bool masked() const { return masked_; }
  // O[m x n] = A[m x k] W[k x n] in the op's type, on `dataflow`.
  arch::PeMatmul matmul_op(arch::Dataflow dataflow, uint64_t a_address, uint64_t w_address,
                           uint64_t o_address, int64_t m, int64_t n, int64_t k) const;

 private:
  ops::AttentionShape shape_;
  // A K/V tile's online softmax step of `block` (S at s, P to p), and the accumulator's rescale by the step's
  // correction (in place) or, `final`, by 1/sum into `out`.
  arch::VecOp softmax_op(const QBlock& block, int64_t k0, int64_t cols, bool first, uint64_t s, uint64_t p,
                         uint64_t statistics) const;
  arch::VecOp scale_op(const QBlock& block, uint64_t accumulator, uint64_t out, uint64_t statistics,
                       bool final) const;
  arch::Program lower_multicast(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                const arch::ArchSpec& spec, const std::string& program_name) const;
  DType dtype_ = DType::bf16;
  bool masked_ = false;  // causal with more than one query: each row its own shift
};

}  // namespace tessera::mapper
