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

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arch/isa/pe_matmul.hpp"
#include "arch/isa/vec_op.hpp"
#include "mapper/attention/program.hpp"
#include "mapper/form.hpp"
#include "ops/kinds/attention.hpp"

namespace tessera::mapper {

class InstructionTimer;

class AttentionStage final : public Form {
 public:
  // nullptr for an op that is not attention.
  static std::shared_ptr<const AttentionStage> of(const ops::Op& op);

  // flash: each core streams its blocks' K/V tiles; flash_mc: K/V loaded once and multicast; naive: S and P
  // through DRAM (mapper/attention/naive.hpp); flash_split: a decode's blocks' keys split over several cores,
  // the partial results merged over the NoC (mapper/attention/split.cpp).
  enum Form : int64_t { flash = 0, flash_mc = 1, naive = 2, flash_split = 3 };
  // An attention mapping's choices (Mapping::choice): rows of a Q block, keys of a K/V tile, cores, the form,
  // and (naive) rows of a softmax pass's chunk, (flash-mc) K/V tile buffers (0: two), (flash-split) the
  // ranges of keys a block is split into.
  struct Choice {
    int64_t block_rows = 0;
    int64_t block_cols = 0;
    int64_t cores = 0;
    Form form = flash;
    int64_t softmax_rows = 0;
    int64_t kv_buffers = 0;
    int64_t splits = 0;
    bool operator==(const Choice& other) const {
      return block_rows == other.block_rows && block_cols == other.block_cols && cores == other.cores &&
             form == other.form && softmax_rows == other.softmax_rows && kv_buffers == other.kv_buffers &&
             splits == other.splits;
    }
  };
  static const Choice& choice_of(const Mapping& mapping);
  // The form as reports name it, before the dataflow: "flash", "flash-mc", "flash-split", "naive".
  static const char* form_name(Form form);

  const char* family() const override { return "attention"; }
  SearchResult search(const std::shared_ptr<const mapper::Form>& self, const arch::ArchSpec& spec,
                      const SearchOptions& options) const override;
  Cost estimate(const Mapping& mapping, const arch::ArchSpec& spec) const override;
  Cost evaluate(const Mapping& mapping, const arch::ArchSpec& spec) const;
  arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec,
                      const std::string& program_name) const override;
  std::string label(const Mapping& mapping) const override;
  std::string describe(const Mapping& mapping) const override;
  NamedValues fields(const Mapping& mapping, const Cost& cost) const override;

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

  // The multicast form: the blocks that share K/V (one batch and kv head) spread over the cores, up to
  // kMostBlocksPerCore a core, dealt heaviest first there and back (so that a causal head's work is even on
  // the cores, and even at every tile: the cores keep pace with each other on the one stream of tiles), each
  // K/V tile loaded once by the first core and multicast to the cores whose blocks see it. slots[c] are core
  // c's blocks (indices into q_blocks) of one stream; empty when a stream has more blocks than that.
  struct Stream {
    std::vector<std::vector<size_t>> slots;  // per core, at most kMostBlocksPerCore blocks
    int64_t keys = 0;                        // keys its heaviest block sees: what the stream loads
    int64_t tiles = 0;                       // K/V tiles over them
  };
  std::vector<Stream> streams(int64_t block_rows, int64_t block_cols, int cores) const;
  // The most blocks a core holds in any of `streams` (its Q block buffers).
  static int blocks_per_core(const std::vector<Stream>& streams);
  // The multicast form's S and P tiles: kMostScoreBuffers where they fit the SRAM beside the rest, else two.
  int multicast_score_buffers(int64_t block_rows, int64_t block_cols, int blocks, int kv,
                              const arch::ArchSpec& spec) const;

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
  // The multicast form's program (mapper/attention/multicast.cpp).
  arch::Program lower_multicast(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                const arch::ArchSpec& spec, const std::string& program_name) const;

  // One K/V tile's step of a block: its matmuls', its softmax's and rescale's, and its loads' cycles.
  struct TileStep {
    int64_t pe = 0, vec = 0, load = 0;
    int64_t cycles() const { return std::max({pe, vec, load}); }
  };
  // What a step depends on besides the mapping: the block's rows, the tile's keys, the mask's compare, the
  // rescale and the loads.
  struct StepKey {
    int64_t rows = 0, keys = 0;
    bool masked = false, rescale = false, loads = false;
    bool operator==(const StepKey& other) const {
      return rows == other.rows && keys == other.keys && masked == other.masked && rescale == other.rescale &&
             loads == other.loads;
    }
  };
  // The flash forms' cost, core by core: each core's cycles (a K/V tile's step at the pace of its slowest
  // unit) and the busy cycles of its PE array, vector unit, DMA engines and NoC port; the steps worked out so
  // far in this evaluation (a few kinds, thousands of steps).
  struct CoreCycles {
    explicit CoreCycles(int cores)
        : cycles(static_cast<size_t>(cores), 0), pe(cycles), vec(cycles), dma(cycles), noc(cycles) {}
    std::vector<int64_t> cycles, pe, vec, dma, noc;
    std::vector<std::pair<StepKey, TileStep>> known_steps;
  };
  // What a flash form's steps cost besides the step itself: the mapping, the machine and its instructions'
  // timer, the form's DMA engines, and whether a core streams its own K/V tiles (the plain and split forms)
  // or is sent them (the multicast form).
  struct FlashCosting {
    const Mapping& mapping;
    const arch::ArchSpec& spec;
    const InstructionTimer& timer;
    const PassEngines& engines;
    bool loads_its_tiles = true;
  };
  // Keys [begin, end) of `block` on `core`: its Q load and its tiles' steps. A tile's step is the slowest of
  // its matmuls, its softmax (the mask's compare on the diagonal tiles only) and rescale (none on the range's
  // first tile), and, where the core streams its own tiles, its loads; tiles of the mapping's block_cols keys
  // but the range's last, which holds what is left of its keys.
  void add_flash_range(CoreCycles& work, size_t core, const FlashCosting& costing, const QBlock& block,
                       int64_t begin, int64_t end) const;
  // A block's end on `core`: its final rescale (O = accumulator / sum) and its store on the store engines,
  // counted busy; returns the cycles they add to the core (the store's only on a machine of one DMA engine,
  // where it cannot run beside the next block).
  int64_t add_block_finish(CoreCycles& work, size_t core, const arch::ArchSpec& spec,
                           const PassEngines& engines, const QBlock& block) const;
  // One tile's step of add_flash_range: keys [k0, k0 + keys) of `block`, with the accumulator's rescale
  // (`rescale`: not on a range's first tile) and, where the core loads its tiles, the tile's loads; from
  // work.known_steps where it is there.
  TileStep tile_step(CoreCycles& work, const FlashCosting& costing, const QBlock& block, int64_t k0,
                     int64_t keys, bool rescale) const;
  // The multicast form's cost: its cores' steps in lockstep with the leader's one stream of K/V tiles
  // (mapper/attention/multicast.cpp).
  Cost multicast_cost(const FlashCosting& costing) const;
  // The DMA cycles of a K/V tile of `keys` keys (its K and V runs) and of a Q block's load or store, each
  // cut into row blocks over `group` (mapper/kit/dma_engines.hpp).
  int64_t tile_load_cycles(const Mapping& mapping, const arch::ArchSpec& spec, const EngineGroup& group,
                           int64_t keys) const;
  int64_t block_transfer_cycles(const arch::ArchSpec& spec, const EngineGroup& group,
                                const QBlock& block) const;
  // A flash form's DMA engines (mapper/kit/dma_engines.hpp, pass_engines): the loads (Q and K/V tiles; the
  // multicast form's K/V tiles) and the stores (O; the multicast form's Q loads too), split by the bytes of
  // a block of `block_rows` rows that sees every key.
  PassEngines flash_engines(const Mapping& mapping, const arch::ArchSpec& spec) const;
  // The cost of a flash form's mapping whose cores did `work`: DRAM bytes of Q (and of Q blocks loaded again
  // by other cores, `q_reload_bytes`), K and V (`kv_bytes`) and O, and partial results reduced over the NoC.
  Cost flash_cost(const arch::ArchSpec& spec, const CoreCycles& work, int64_t kv_bytes,
                  int64_t q_reload_bytes, int64_t reduction_bytes) const;

  // One K/V tile of a block's flash loop on a core: keys [k0, k0 + cols) of q_blocks' block `block`, the
  // first and the last of the block's range on the core, the runs of its K (and V) rows.
  struct FlashTile {
    size_t block = 0;
    int64_t k0 = 0, cols = 0;
    bool first = false, last = false;
    std::vector<attention::Run> runs;
  };
  // The tiles of keys [begin, end) of blocks[block], appended to `tiles`.
  void append_flash_tiles(const attention::ProgramTensors& tensors, const std::vector<QBlock>& blocks,
                          size_t block, int64_t begin, int64_t end, int64_t cols,
                          std::vector<FlashTile>& tiles) const;
  // What a flash form's lowering shares among its cores and their steps: the program and its tensors, a
  // core's SRAM buffers, the mapping's dataflow, the machine's DMA, the form's engines and the Q blocks.
  struct FlashProgram {
    arch::Program& program;
    const attention::ProgramTensors& tensors;
    const attention::Buffers& buffers;
    arch::Dataflow dataflow;
    const arch::DmaSpec& dma;
    const PassEngines& engines;
    const std::vector<QBlock>& blocks;
  };
  // A core's flash loop written queue by queue (mapper/attention/lower.cpp); the multicast form's schedule
  // and its cores (mapper/attention/multicast.cpp).
  class FlashCore;
  struct MulticastPlan;
  class MulticastCore;
  // One core's flash loop over `tiles` (the ranges of its blocks, in order): the Q and K/V loads dealt
  // round the load engines, S and P V on the PE array, the online softmax and the accumulator's rescales on
  // the vector unit; after a block's last tile t, finish_block(t) appends what ends the block (after a wait
  // on the signal of its last P V, `last_pv_signal`: pv_done for a vector instruction, in order after the
  // others' waits on it; another name for another queue): the final normalisation and the store, or the split
  // form's sends or merge.
  void append_flash_core(std::vector<arch::Instruction>& list, const FlashProgram& flash,
                         const std::vector<FlashTile>& tiles, const std::function<void(size_t)>& finish_block,
                         const std::string& last_pv_signal = "pv_done") const;
  // The multicast form's items, tiles and their receivers (MulticastPlan) for K/V tiles of `cols` keys on
  // `cores` cores, into `plan` (whose streams are set).
  void plan_multicast(const FlashProgram& flash, int64_t cols, int cores, MulticastPlan& plan) const;

  // The store of `block`'s output from the output buffer in `pieces` (its rows dealt round the store
  // engines): each piece waits for out_full on its engine's semaphore (out_full_signals: what the instruction
  // that fills the buffer signals) and signals `free_signal` (none if empty).
  void append_block_store(std::vector<arch::Instruction>& list, const FlashProgram& flash,
                          const std::vector<DealtBlock>& pieces, const QBlock& block,
                          const std::string& free_signal) const;
  arch::Signals out_full_signals(const FlashProgram& flash, const std::vector<DealtBlock>& pieces) const;
  // The split-KV form's (mapper/attention/split.cpp).
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
