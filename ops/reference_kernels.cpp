#include "ops/reference_kernels.hpp"

#include <algorithm>
#include <thread>

#include "common/error.hpp"
#include "ops/encodings.hpp"
#include "ops/input_generator.hpp"

namespace tessera::ops {

RowMajorMatrix to_matrix(const HostTensor& tensor) {
  RowMajorMatrix matrix(tensor.rows, tensor.cols);
  double* data = matrix.data();
  for (int64_t i = 0; i < tensor.elements(); ++i) data[i] = tensor.value(i);
  return matrix;
}

void gemm_rows(const RowMajorMatrix& a, const RowMajorMatrix& w, double* out, int64_t out_pitch,
               int threads) {
  constexpr int64_t kRowsPerBlock = 64;
  const int64_t m = a.rows();
  const int64_t blocks = (m + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, blocks));
  using Strided = Eigen::Map<RowMajorMatrix, 0, Eigen::OuterStride<>>;
  auto work = [&](int64_t worker) {
    for (int64_t block = worker; block < blocks; block += workers) {
      const int64_t first = block * kRowsPerBlock;
      const int64_t count = std::min(kRowsPerBlock, m - first);
      Strided o(out + first * out_pitch, count, w.cols(), Eigen::OuterStride<>(out_pitch));
      o.noalias() = a.middleRows(first, count) * w;
    }
  };
  std::vector<std::thread> pool;
  for (int64_t worker = 1; worker < workers; ++worker) pool.emplace_back(work, worker);
  work(0);
  for (auto& thread : pool) thread.join();
}

void for_each_row(int64_t rows, int threads, const std::function<void(int64_t, std::vector<double>&)>& fn) {
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, rows));
  auto work = [&](int64_t worker) {
    std::vector<double> scratch;
    for (int64_t row = worker; row < rows; row += workers) fn(row, scratch);
  };
  std::vector<std::thread> pool;
  for (int64_t worker = 1; worker < workers; ++worker) pool.emplace_back(work, worker);
  work(0);
  for (auto& thread : pool) thread.join();
}

double generated_value(DType dtype, uint64_t seed, uint32_t tensor, int64_t element) {
  const auto at = static_cast<uint64_t>(element);
  switch (dtype) {
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
}

}  // namespace tessera::ops
