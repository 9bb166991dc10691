#include "ops/reference_kernels.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/large_memory.hpp"
#include "common/parallel.hpp"
#include "ops/encodings.hpp"
#include "ops/input_generator.hpp"

namespace tessera::ops {

RowMajorMatrix to_matrix(const HostTensor& tensor) {
  RowMajorMatrix matrix(tensor.rows, tensor.cols);  // not yet touched: Eigen leaves it uninitialised
  double* data = matrix.data();
  advise_huge_pages(data, static_cast<size_t>(tensor.elements()) * sizeof(double));
  for (int64_t i = 0; i < tensor.elements(); ++i) data[i] = tensor.value(i);
  return matrix;
}

void gemm_rows(const RowMajorMatrix& a, const RowMajorMatrix& w, double* out, int64_t out_pitch,
               int threads) {
  // Each block's product packs all of W again (Eigen's GEMM per call), so blocks are as large as still
  // leaves eight of them to share among the threads: 64 to 512 rows (4096 rows: 8 blocks, B packed 8 times,
  // not 64: 3.35 -> 2.33 s on one thread). The sums are the same to the bit: Eigen splits k the same way
  // whatever the block's rows, and the block size does not depend on the thread count.
  const int64_t m = a.rows();
  const int64_t kRowsPerBlock = std::clamp<int64_t>((m + 8 * 64 - 1) / (8 * 64) * 64, 64, 512);
  const int64_t blocks = (m + kRowsPerBlock - 1) / kRowsPerBlock;
  using Strided = Eigen::Map<RowMajorMatrix, 0, Eigen::OuterStride<>>;
  for_each_item(blocks, threads, [&](int64_t block) {
    const int64_t first = block * kRowsPerBlock;
    const int64_t count = std::min(kRowsPerBlock, m - first);
    Strided o(out + first * out_pitch, count, w.cols(), Eigen::OuterStride<>(out_pitch));
    o.noalias() = a.middleRows(first, count) * w;
  });
}

void for_each_row(int64_t rows, int threads, const std::function<void(int64_t, std::vector<double>&)>& fn) {
  // Rows in chunks, a scratch vector a chunk (its rows computed one by one, each alone).
  constexpr int64_t kRowsPerChunk = 16;
  for_each_item((rows + kRowsPerChunk - 1) / kRowsPerChunk, threads, [&](int64_t chunk) {
    std::vector<double> scratch;
    for (int64_t row = chunk * kRowsPerChunk; row < std::min(rows, (chunk + 1) * kRowsPerChunk); ++row)
      fn(row, scratch);
  });
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
