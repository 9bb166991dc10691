// A vector stage (DESIGN.md, "Operators as stage graphs"): an op's work on the vector unit — a softmax, a
// norm, an elementwise function, a pooling window — over the rows of its tensors. The mapper splits the rows
// over cores and tiles each core's share into row blocks that stream through SRAM (load, one vec instruction,
// store), double-buffered or not; the cost model times a block with the vector unit's closed form
// (arch/timing/vector_timing) and its DMA and DRAM transfers; the lowering writes the tile program.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/spec.hpp"
#include "mapper/cost.hpp"
#include "mapper/form.hpp"
#include "mapper/kit/epilogue_work.hpp"
#include "mapper/mapping.hpp"
#include "mapper/search.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

class VectorStage;
// The vector stage a mapping of one maps; reading another form as one is a broken invariant.
const VectorStage& vector_stage_of(const Mapping& mapping);

class VectorStage : public Form {
 public:
  // ---- the form (mapper/form.hpp; mapper/kit/vector_form.cpp)
  const char* family() const override { return "vector"; }
  SearchResult search(const std::shared_ptr<const Form>& self, const arch::ArchSpec& spec,
                      const SearchOptions& options) const override;
  Cost estimate(const Mapping& mapping, const arch::ArchSpec& spec) const override;
  arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec,
                      const std::string& program_name) const override;
  std::string label(const Mapping&) const override { return "vec"; }
  std::string describe(const Mapping& mapping) const override;
  NamedValues fields(const Mapping& mapping, const Cost& cost) const override;

  // The stage of a vector op kind (softmax, layernorm, rmsnorm, elementwise, pool); nullptr for others.
  static std::shared_ptr<const VectorStage> of(const ops::Op& op);
  // The unfused pass of a contraction's epilogue over its stored output (mapper/kit/epilogue_work.hpp): a map
  // of its chain over the output's rows, reading the residual tile and the bias row where the chain has them.
  static std::shared_ptr<const VectorStage> epilogue_pass(const EpilogueWork& epilogue);
  // A norm of X + R (norm_adds_tile): the same norm of one tile, and the pass X + R -> T before it (its
  // unfused form).
  bool norm_adds_tile() const;
  std::shared_ptr<const VectorStage> norm_alone() const;
  std::shared_ptr<const VectorStage> residual_add_pass() const;

  arch::VectorKind kind() const { return kind_; }
  // What one block of `units` row units does (pool: units are output image rows; else rows of the tile); a
  // rope's block is an arch::VecRope: instruction() and work() cover every kind.
  arch::VecOp block(int64_t first_unit, int64_t units) const;
  arch::VectorWork work(int64_t first_unit, int64_t units) const;
  // The block's instruction on its buffers: X, Y (a second tile, or a rope's table rows), O, and the row
  // parameters (gamma then beta, or a bias row).
  struct BlockAddresses {
    uint64_t x = 0, y = 0, o = 0, parameters = 0;
  };
  arch::Operation instruction(int64_t first_unit, int64_t units, const BlockAddresses& at) const;
  int64_t units() const { return units_; }
  // Elements of X, Y (a second tile or a bias row), O that a block of `units` moves from and to DRAM.
  int64_t x_elements(int64_t first_unit, int64_t units) const;
  // X elements all blocks of a split into shares of `per_core` units and blocks of `block` read (a pool's
  // blocks re-read their halo rows).
  int64_t x_elements_in_blocks(int64_t per_core, int64_t block) const;
  int64_t y_elements(int64_t units) const;  // per block: a tile's share, or 0 for a row loaded once per core
  DType y_dtype() const { return y_dtype_; }  // a rope's table: fp32; else the op's type
  int64_t y_cols() const { return y_cols_; }
  int64_t row_parameter_elements() const;  // gamma, beta or a bias row: loaded once per core
  int64_t o_elements(int64_t units) const;
  DType dtype() const { return dtype_; }
  DType out_dtype() const { return out_dtype_; }
  int64_t cols() const { return cols_; }

  // ---- lowering: the X rows a block reads (pool: whole input rows with their halo), the O rows it writes.
  struct Rows {
    int64_t first = 0, count = 0;
  };
  Rows x_rows(int64_t first_unit, int64_t units) const;
  Rows o_rows(int64_t first_unit, int64_t units) const;
  // The runs of Y's rows a block loads, one after another into its Y buffer: X's rows, or for a rope the
  // table rows of its tokens (a run per sequence the block touches: each sequence starts at the table's
  // first row).
  std::vector<Rows> y_runs(int64_t first_unit, int64_t units) const;
  // Blocks never cross an image (pool): the largest block a unit can start.
  int64_t units_left_in_image(int64_t first_unit) const;

 private:
  arch::VectorKind kind_ = arch::VectorKind::map;
  DType dtype_ = DType::bf16, out_dtype_ = DType::bf16;
  int64_t rows_ = 0, cols_ = 0, units_ = 0;
  std::vector<arch::VecFn> chain_;
  bool y_tile_ = false, y_row_ = false;
  DType y_dtype_ = DType::bf16;
  int64_t y_cols_ = 0;  // of the Y tile (0 without one)
  // rope: tokens per sequence (the table's rows), the heads' geometry, the pairing
  int64_t seq_ = 0, head_dim_ = 0, rotary_dim_ = 0;
  bool interleaved_ = false;
  double scale_ = 1.0, eps_ = 0;
  bool causal_ = false;
  // pool
  int64_t h_ = 0, w_ = 0, p_ = 0, q_ = 0, r_ = 1, s_ = 1, stride_ = 1, pad_ = 0;
  bool average_ = false;
};

// The vector stage's search: every legal (cores, rows per block, buffering), scored; the best few kept.
SearchResult search_vector(const std::shared_ptr<const VectorStage>& stage, const arch::ArchSpec& spec,
                           const SearchOptions& options);
// `output_fraction`: the share of its output's bytes a store moves where the machine codes a sparse output
// (arch::coded_fraction); 1: raw.
Cost evaluate_vector(const Mapping& mapping, const arch::ArchSpec& spec, double output_fraction = 1.0);
arch::Program lower_vector(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                           const arch::ArchSpec& spec, const std::string& program_name);

// The program tensors a vector stage reads and writes: X, the tile Y (or -1), the row parameters (gamma and
// beta, or a bias row), O.
struct VectorTensors {
  int x = -1, y = -1;
  std::vector<int> parameters;
  int o = -1;
};
// Where a pass sits in a program of several (mapper/kit/vector_lowering.cpp): its semaphores' prefix; with a
// `barrier_count`, each core's first load waits for that many signals of the `barrier` semaphore (its name
// without the prefix) on its own core; with `stored` (a name and a core count), every store signals that
// semaphore on each of those cores: the barrier of a pass after this one.
struct StoreSignal {
  std::string name;
  int cores = 0;
};
struct PassLinks {
  std::string prefix;
  std::string barrier;
  int barrier_count = 0;
  StoreSignal stored;
};
// Appends a vector stage's instructions to the cores of `program` (after what they already run), linked to
// the passes around it by `links`. Returns the stores appended.
int append_vector_pass(arch::Program& program, const Mapping& mapping, const arch::ArchSpec& spec,
                       const VectorTensors& tensors, const PassLinks& links);

}  // namespace tessera::mapper
