#include "sim/vector_kind_kernels.hpp"

#include <algorithm>
#include <optional>

#include "arch/isa/vector_kinds/vector_kind_info.hpp"
#include "common/error.hpp"
#include "ops/vector_kernels.hpp"

namespace tessera::sim {

namespace {

int64_t packed_or(int64_t pitch, int64_t row_bytes) {
  return pitch != 0 ? pitch : row_bytes;
}

std::optional<int64_t> causal_mask_of(const arch::VecOp& op) {
  return op.causal_shift == arch::kNoCausalMask ? std::nullopt : std::optional<int64_t>(op.causal_shift);
}

VectorResult map_kernel(const VectorOperands& in, const arch::VecOp& op) {
  VectorResult result{in.x, {}};
  ops::apply_chain(op.chain, result.out, in.y, in.b_row, op.rows, op.cols, static_cast<float>(op.scale));
  return result;
}

VectorResult reduce_kernel(const VectorOperands& in, const arch::VecOp& op) {
  return {ops::reduce_rows(in.x, op.rows, op.cols, op.kind == arch::VectorKind::reduce_max), {}};
}

VectorResult softmax_kernel(const VectorOperands& in, const arch::VecOp& op) {
  VectorResult result{std::vector<float>(in.x.size()), {}};
  ops::softmax_rows(in.x.data(), result.out.data(), op.rows, op.cols, static_cast<float>(op.scale),
                    causal_mask_of(op));
  return result;
}

// X, or X + Y (a residual) as the first pass keeps it in the output tile for the others to read back:
// rounded to the output's type.
std::vector<float> norm_input(const VectorOperands& in, const arch::VecOp& op) {
  if (!op.norm_adds_y()) return in.x;
  std::vector<float> input = in.x;
  for (size_t i = 0; i < input.size(); ++i) input[i] += in.y[i];
  const int64_t out_element = size_bytes(op.out_dtype);
  std::vector<uint8_t> stored(static_cast<size_t>(op.rows * op.cols * out_element));
  ops::write_tile(op.out_dtype, input, stored.data(), op.cols * out_element, op.rows, op.cols);
  return ops::read_tile(op.out_dtype, stored.data(), op.cols * out_element, op.rows, op.cols);
}

VectorResult layernorm_kernel(const VectorOperands& in, const arch::VecOp& op) {
  const std::vector<float> input = norm_input(in, op);
  VectorResult result{std::vector<float>(input.size()), {}};
  ops::layernorm_rows(input.data(), in.g_row.data(), in.b_row.data(), result.out.data(), op.rows, op.cols,
                      static_cast<float>(op.eps));
  return result;
}

VectorResult rmsnorm_kernel(const VectorOperands& in, const arch::VecOp& op) {
  const std::vector<float> input = norm_input(in, op);
  VectorResult result{std::vector<float>(input.size()), {}};
  ops::rmsnorm_rows(input.data(), in.g_row.data(), result.out.data(), op.rows, op.cols,
                    static_cast<float>(op.eps));
  return result;
}

VectorResult pool_kernel(const VectorOperands& in, const arch::VecOp& op) {
  return {ops::pool_tile(in.x, ops::PoolTileGeometry{op.ih, op.iw, op.e, op.q, op.cols, op.r, op.s, op.stride,
                                                     op.pad_top, op.pad_left, op.average}),
          {}};
}

VectorResult online_softmax_kernel(const VectorOperands& in, const arch::VecOp& op) {
  VectorResult result{std::vector<float>(in.x.size()), in.statistics};
  result.statistics.resize(static_cast<size_t>(op.rows * arch::VecOp::kRowStatistics));
  ops::online_softmax_rows(in.x.data(), result.out.data(), result.statistics.data(), op.rows, op.cols,
                           static_cast<float>(op.scale), causal_mask_of(op), op.first);
  return result;
}

VectorResult scale_rows_kernel(const VectorOperands& in, const arch::VecOp& op) {
  VectorResult result{std::vector<float>(in.x.size()), {}};
  ops::scale_rows(in.x.data(), in.statistics.data(), result.out.data(), op.rows, op.cols, op.by_inverse_sum);
  return result;
}

VectorResult merge_partials_kernel(const VectorOperands& in, const arch::VecOp& op) {
  VectorResult result{std::vector<float>(static_cast<size_t>(op.rows * op.cols)), {}};
  ops::merge_partials(in.x.data(), in.statistics.data(), result.out.data(), op.rows, op.cols, op.parts);
  return result;
}

VectorResult weighted_sum_kernel(const VectorOperands& in, const arch::VecOp& op) {
  VectorResult result{std::vector<float>(static_cast<size_t>(op.rows * op.cols)), {}};
  ops::weighted_sum(in.x.data(), in.weights.data(), op.uses_y() ? in.y.data() : nullptr, result.out.data(),
                    op.rows, op.cols, op.parts);
  return result;
}

using VectorKernel = VectorResult (*)(const VectorOperands&, const arch::VecOp&);

struct KernelLine {
  arch::VectorKind kind;
  VectorKernel kernel;
};

// One line per VecOp kind (rope and route are instructions of their own, with their own execution).
constexpr KernelLine kKernels[] = {
    {arch::VectorKind::map, &map_kernel},
    {arch::VectorKind::reduce_sum, &reduce_kernel},
    {arch::VectorKind::reduce_max, &reduce_kernel},
    {arch::VectorKind::softmax, &softmax_kernel},
    {arch::VectorKind::layernorm, &layernorm_kernel},
    {arch::VectorKind::rmsnorm, &rmsnorm_kernel},
    {arch::VectorKind::pool, &pool_kernel},
    {arch::VectorKind::online_softmax, &online_softmax_kernel},
    {arch::VectorKind::scale_rows, &scale_rows_kernel},
    {arch::VectorKind::merge_partials, &merge_partials_kernel},
    {arch::VectorKind::weighted_sum, &weighted_sum_kernel},
};

}  // namespace

VectorOperands read_vector_operands(const uint8_t* sram, const arch::VecOp& op) {
  const arch::VectorOperandRoles& roles = arch::info_of(op.kind).operands;
  const int64_t element = size_bytes(op.dtype), row_bytes = op.cols * element;
  VectorOperands operands;
  operands.x = ops::read_tile(op.dtype, sram + op.x_address, packed_or(op.x_pitch_bytes, row_bytes),
                              op.x_rows(), op.cols);
  if (op.uses_y())
    operands.y = ops::read_tile(op.dtype, sram + op.y_address, packed_or(op.y_pitch_bytes, row_bytes),
                                op.rows, op.cols);
  if (roles.g == arch::GRole::parameter_row)
    operands.g_row = ops::read_tile(op.dtype, sram + op.g_address, row_bytes, 1, op.cols);
  if (op.uses_b()) operands.b_row = ops::read_tile(op.dtype, sram + op.b_address, row_bytes, 1, op.cols);
  if (op.reads_statistics()) {
    const int64_t statistics_pitch = arch::VecOp::kRowStatistics * size_bytes(DType::fp32);
    operands.statistics = ops::read_tile(DType::fp32, sram + op.g_address, statistics_pitch,
                                         op.statistics_rows(), arch::VecOp::kRowStatistics);
  }
  if (roles.g == arch::GRole::weights)
    operands.weights = ops::read_tile(DType::fp32, sram + op.g_address, op.parts * size_bytes(DType::fp32),
                                      op.rows, op.parts);
  return operands;
}

VectorResult compute_vector_result(const VectorOperands& operands, const arch::VecOp& op) {
  const auto line = std::find_if(std::begin(kKernels), std::end(kKernels),
                                 [&](const KernelLine& candidate) { return candidate.kind == op.kind; });
  TESSERA_ASSERT(line != std::end(kKernels), "every VecOp kind has a line in the vector unit's kernel table");
  VectorResult result = line->kernel(operands, op);
  // Only a kind that updates its statistics writes them back.
  if (arch::info_of(op.kind).operands.g != arch::GRole::statistics_updated) result.statistics.clear();
  return result;
}

}  // namespace tessera::sim
