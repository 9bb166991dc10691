// The GEMM contraction stage: one GEMM, or `groups` independent GEMMs of the same shape run one after another
// (a grouped convolution's implicit GEMMs). A may be an im2col view of a convolution's input: then its rows
// are gathered from runs of at most `a_run` contiguous elements, and only `a_dram_fraction` of its elements
// come from DRAM (the rest are padding zeros). W may be the block-diagonal view of `packed` groups' weights,
// of which only 1/packed is real (docs/design-notes.md, "Packed groups").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "arch/isa/views.hpp"
#include "mapper/contraction/stage.hpp"

namespace tessera::mapper {

struct GemmProblem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::bf16;
  int64_t groups = 1;
  std::optional<DType> psum;       // ContractionShape::psum
  ops::ActivationDensity density;  // ContractionShape::density
  int64_t a_run = 0;               // 0: A's tile rows are contiguous
  double a_dram_fraction = 1.0;    // of A's elements, those read from DRAM
  int64_t packed = 1;              // groups per block-diagonal W
  int64_t w_run = 0;  // packed: a W row's weights are one run of k/groups elements (0: the tile row)
  // A is this view of the op's first input, W this view of its weights (their sources are set when the
  // lowering declares them).
  std::optional<arch::Im2colView> a_view;
  std::optional<arch::BlockDiagonalView> w_view;
};

class GemmStage : public ContractionStage {
 public:
  explicit GemmStage(GemmProblem problem);
  const GemmProblem& problem() const { return problem_; }

  const ContractionShape& shape() const override { return shape_; }
  const char* kind() const override { return "gemm"; }
  std::string dataflow_label(arch::Dataflow dataflow) const override { return arch::name_of(dataflow); }
  std::string form_suffix() const override;
  bool same_stage(const ContractionStage& other) const override;
  bool can_run(arch::Dataflow dataflow) const override { return dataflow != arch::Dataflow::rs; }
  int64_t useful_macs() const override { return macs() / problem_.packed; }

  Infeasibility obstacle(arch::Dataflow dataflow, const arch::ArchSpec& spec) const override;
  Granules granules(arch::Dataflow dataflow, const arch::ArchSpec& spec) const override;

  double a_dram_fraction() const override { return problem_.a_dram_fraction; }
  int64_t w_dram_divisor() const override { return problem_.packed; }
  TileRuns runs(int64_t tm, int64_t tn, int64_t tk) const override;
  arch::PeSramTraffic pe_traffic(arch::Dataflow dataflow, int64_t tm, int64_t tn, int64_t tk,
                                 const arch::ArchSpec& spec) const override;

  std::array<int, 3> declare_operands(const ops::Op& op, const TensorDeclarer& declarer) const override;
  std::vector<TileLoad> tile_loads(const TileFrame& frame, int tensor, int64_t rows_tile, int64_t cols_tile,
                                   int64_t group) const override;
  arch::Operation pe_operation(const TileFrame& frame, const TileIteration& iteration,
                               const PeOperands& operands, int64_t part) const override;
  arch::TensorRegion output_region(const TileFrame& frame, const TileIteration& iteration, int64_t rows,
                                   int64_t cols) const override;

 private:
  // Where a tile of the GEMM of group g lies in the op's tensors: A's columns and W's rows are the group's
  // r*s*c/groups taps, O's columns its k/groups filters.
  int64_t column_offset(int tensor, int64_t group) const;
  int64_t row_offset(int tensor, int64_t group) const;

  GemmProblem problem_;
  ContractionShape shape_;
};

}  // namespace tessera::mapper
