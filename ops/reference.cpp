#include "ops/reference.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <thread>

#include "common/error.hpp"
#include "ops/encodings.hpp"
#include "ops/input_generator.hpp"

namespace tessera::ops {

namespace {
using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

RowMajorMatrix to_matrix(const HostTensor& tensor) {
  RowMajorMatrix matrix(tensor.rows, tensor.cols);
  double* data = matrix.data();
  for (int64_t i = 0; i < tensor.elements(); ++i) data[i] = tensor.value(i);
  return matrix;
}
}  // namespace

std::vector<HostTensor> generate_inputs(const Op& op, uint64_t seed) {
  std::vector<HostTensor> inputs;
  for (const TensorDesc& desc : tensors_of(op))
    if (!desc.is_output)
      inputs.push_back(generate_input(desc.dtype, desc.rows, desc.cols, seed, desc.tensor_id));
  return inputs;
}

std::vector<double> reference_output(const Op& op, const std::vector<HostTensor>& inputs, int threads) {
  const auto& gemm = std::get<GemmShape>(op.shape);
  const RowMajorMatrix a = to_matrix(inputs.at(0));
  const RowMajorMatrix w = to_matrix(inputs.at(1));
  std::vector<double> out(static_cast<size_t>(gemm.m * gemm.n));
  Eigen::Map<RowMajorMatrix> o(out.data(), gemm.m, gemm.n);
  // Fixed blocks of output rows, dealt to threads round-robin: Eigen's blocking (and so the summation order)
  // depends on the product's shape, so the blocks must not depend on the thread count for the result not to.
  constexpr int64_t kRowsPerBlock = 64;
  const int64_t blocks = (gemm.m + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, blocks));
  auto work = [&](int64_t worker) {
    for (int64_t block = worker; block < blocks; block += workers) {
      const int64_t first = block * kRowsPerBlock;
      const int64_t count = std::min(kRowsPerBlock, gemm.m - first);
      o.middleRows(first, count).noalias() = a.middleRows(first, count) * w;
    }
  };
  std::vector<std::thread> pool;
  for (int64_t worker = 1; worker < workers; ++worker) pool.emplace_back(work, worker);
  work(0);
  for (auto& thread : pool) thread.join();
  return out;
}

std::vector<double> reference_at(const Op& op, uint64_t seed, const std::vector<int64_t>& positions) {
  const auto& gemm = std::get<GemmShape>(op.shape);
  const auto index = static_cast<uint32_t>(op.index);
  const uint32_t a_id = tensor_id(index, 0), w_id = tensor_id(index, 1);
  auto value = [&](uint32_t tensor, int64_t element) -> double {
    const auto at = static_cast<uint64_t>(element);
    switch (op.dtype) {
      case DType::fp32:
        return input_fp32(seed, tensor, at);
      case DType::bf16:
        return bf16_to_float(input_bf16(seed, tensor, at));
      case DType::fp16:
        return fp16_to_float(input_fp16(seed, tensor, at));
      case DType::int8:
        return input_int8(seed, tensor, at);
      case DType::int32:
        break;
    }
    TESSERA_ASSERT(false, "operands are fp32, bf16, fp16 or int8");
  };
  std::vector<double> values;
  values.reserve(positions.size());
  for (int64_t position : positions) {
    const int64_t row = position / gemm.n, col = position % gemm.n;
    double sum = 0;
    for (int64_t k = 0; k < gemm.k; ++k) sum += value(a_id, row * gemm.k + k) * value(w_id, k * gemm.n + col);
    values.push_back(sum);
  }
  return values;
}

}  // namespace tessera::ops
