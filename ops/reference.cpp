#include "ops/reference.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <thread>

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

}  // namespace tessera::ops
