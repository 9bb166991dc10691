#include "mapper/contraction/gemm_stage.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::mapper {

GemmStage::GemmStage(GemmProblem problem)
    : problem_(std::move(problem)), shape_{problem_.m,      problem_.n,    problem_.k,      problem_.dtype,
                                           problem_.groups, problem_.psum, problem_.density} {}

std::string GemmStage::form_suffix() const {
  return problem_.packed > 1 ? fmt::format(" pack={}", problem_.packed) : std::string();
}

bool GemmStage::same_stage(const ContractionStage& other) const {
  const auto* gemm = dynamic_cast<const GemmStage*>(&other);
  return gemm && gemm->problem_.packed == problem_.packed;
}

Infeasibility GemmStage::obstacle(arch::Dataflow dataflow, const arch::ArchSpec&) const {
  if (dataflow == arch::Dataflow::rs)
    return {"", "row stationary maps convolutions directly, not a GEMM's implicit form"};
  return {};
}

Granules GemmStage::granules(arch::Dataflow dataflow, const arch::ArchSpec& spec) const {
  return matmul_granules(dataflow, spec.core.pe_array);
}

TileRuns GemmStage::runs(int64_t tm, int64_t tn, int64_t tk) const {
  TileRuns runs;
  // An im2col row is gathered in runs of at most a_run elements: shorter bursts, lower rate. A tile that
  // spans whole rows of its tensor is one contiguous run (the engines merge its rows).
  runs.a = problem_.a_run > 0 ? std::min(tk, problem_.a_run) : tk == problem_.k ? tm * tk : tk;
  runs.w = problem_.w_run > 0 ? std::min(tn, problem_.w_run) : tn == problem_.n ? tk * tn : tn;
  runs.o = tn == problem_.n && problem_.groups == 1 ? tm * tn : tn;
  return runs;
}

arch::PeSramTraffic GemmStage::pe_traffic(arch::Dataflow dataflow, int64_t tm, int64_t tn, int64_t tk,
                                          const arch::ArchSpec& spec) const {
  return arch::pe_sram_traffic(dataflow, problem_.dtype, shape_.o_dtype(), tm, tn, tk, false,
                               spec.core.pe_array.rows, spec.core.pe_array.cols);
}

std::array<int, 3> GemmStage::declare_operands(const ops::Op& op, const TensorDeclarer& declarer) const {
  const std::vector<ops::TensorDesc> tensors = ops::tensors_of(op);
  std::array<int, 3> operand{};
  if (problem_.a_view) {
    const int x = declarer.add(declarer.declared(tensors[0]));
    arch::TensorDecl view;
    view.name = "A";
    view.dtype = op.dtype;
    view.role = arch::TensorRole::view;
    arch::Im2colView im2col = *problem_.a_view;
    im2col.source = x;
    view.rows = im2col.rows();
    view.cols = im2col.cols();
    view.view = im2col;
    operand[kA] = declarer.add(view);
  } else {
    operand[kA] = declarer.add(declarer.declared(tensors[0]));
  }
  operand[kW] = declarer.add(declarer.declared(tensors[1]));
  if (problem_.w_view) {
    arch::TensorDecl view;
    view.name = "Wb";
    view.dtype = op.dtype;
    view.role = arch::TensorRole::view;
    arch::BlockDiagonalView block_diagonal = *problem_.w_view;
    block_diagonal.source = operand[kW];
    view.rows = block_diagonal.rows();
    view.cols = block_diagonal.cols();
    view.view = block_diagonal;
    operand[kW] = declarer.add(view);
  }
  operand[kO] = declarer.add(declarer.declared(tensors.back()));  // O is the last
  return operand;
}

int64_t GemmStage::column_offset(int tensor, int64_t group) const {
  return tensor == kA ? group * problem_.k : tensor == kO ? group * problem_.n : 0;
}

int64_t GemmStage::row_offset(int tensor, int64_t group) const {
  return tensor == kW ? group * problem_.k : 0;
}

std::vector<TileLoad> GemmStage::tile_loads(const TileFrame& frame, int tensor, int64_t rows_tile,
                                            int64_t cols_tile, int64_t group) const {
  const DimPartition& rows = frame.parts[tensor == kA ? 0 : 2];
  const DimPartition& cols = frame.parts[tensor == kA ? 2 : 1];
  return {{arch::TensorRegion{frame.tensors[tensor], row_offset(tensor, group) + rows.tile_begin(rows_tile),
                              rows.tile_size(rows_tile),
                              column_offset(tensor, group) + cols.tile_begin(cols_tile),
                              cols.tile_size(cols_tile)},
           0}};
}

arch::Operation GemmStage::pe_operation(const TileFrame& frame, const TileIteration& iteration,
                                        const PeOperands& operands, int64_t /*part: one*/) const {
  arch::PeMatmul matmul;
  matmul.m = frame.parts[0].tile_size(iteration.m_tile);
  matmul.n = frame.parts[1].tile_size(iteration.n_tile);
  matmul.k = frame.parts[2].tile_size(iteration.k_tile);
  place_operands(matmul, operands, matmul.k, matmul.n);
  return matmul;
}

arch::TensorRegion GemmStage::output_region(const TileFrame& frame, const TileIteration& iteration,
                                            int64_t rows, int64_t cols) const {
  return arch::TensorRegion{frame.tensors[kO], frame.parts[0].tile_begin(iteration.m_tile), rows,
                            column_offset(kO, iteration.group) + frame.parts[1].tile_begin(iteration.n_tile),
                            cols};
}

}  // namespace tessera::mapper
