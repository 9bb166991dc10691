#include "ops/reference.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
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

namespace {

// O[m x n] = A[m x k] * W[k x n] in float64, rows in fixed blocks dealt to threads: Eigen's blocking (and so
// the summation order) depends on the product's shape, so the blocks must not depend on the thread count for
// the result not to.
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

// The im2col matrix of one group: row (n, p, q), column (r, s, c) of the group, zero where the window leaves
// the input.
RowMajorMatrix im2col(const ConvShape& conv, const HostTensor& x, int64_t group) {
  const int64_t p = conv.p(), q = conv.q(), cg = conv.group_c();
  RowMajorMatrix columns = RowMajorMatrix::Zero(conv.n * p * q, conv.r * conv.s * cg);
  for (int64_t image = 0; image < conv.n; ++image)
    for (int64_t y = 0; y < p; ++y)
      for (int64_t z = 0; z < q; ++z) {
        double* row = columns.data() + ((image * p + y) * q + z) * columns.cols();
        for (int64_t rr = 0; rr < conv.r; ++rr) {
          const int64_t iy = y * conv.stride + rr * conv.dilation - conv.pad;
          if (iy < 0 || iy >= conv.h) continue;
          for (int64_t ss = 0; ss < conv.s; ++ss) {
            const int64_t ix = z * conv.stride + ss * conv.dilation - conv.pad;
            if (ix < 0 || ix >= conv.w) continue;
            const int64_t pixel = (image * conv.h + iy) * conv.w + ix;
            for (int64_t cc = 0; cc < cg; ++cc)
              row[(rr * conv.s + ss) * cg + cc] = x.value(pixel * conv.c + group * cg + cc);
          }
        }
      }
  return columns;
}

std::vector<double> pool_reference(const PoolShape& pool, const HostTensor& x) {
  const int64_t p = pool.p(), q = pool.q();
  std::vector<double> out(static_cast<size_t>(pool.n * p * q * pool.c));
  for (int64_t image = 0; image < pool.n; ++image)
    for (int64_t y = 0; y < p; ++y)
      for (int64_t z = 0; z < q; ++z)
        for (int64_t channel = 0; channel < pool.c; ++channel) {
          double best = -INFINITY, sum = 0;
          for (int64_t rr = 0; rr < pool.r; ++rr)
            for (int64_t ss = 0; ss < pool.s; ++ss) {
              const int64_t iy = y * pool.stride + rr - pool.pad, ix = z * pool.stride + ss - pool.pad;
              if (iy < 0 || iy >= pool.h || ix < 0 || ix >= pool.w) continue;
              const double value = x.value(((image * pool.h + iy) * pool.w + ix) * pool.c + channel);
              best = std::max(best, value);
              sum += value;
            }
          out[static_cast<size_t>(((image * p + y) * q + z) * pool.c + channel)] =
              pool.mode == PoolMode::max ? best : sum / static_cast<double>(pool.r * pool.s);
        }
  return out;
}

}  // namespace

std::vector<double> reference_output(const Op& op, const std::vector<HostTensor>& inputs, int threads) {
  if (const auto* pool = std::get_if<PoolShape>(&op.shape)) return pool_reference(*pool, inputs.at(0));
  if (const auto* conv = std::get_if<ConvShape>(&op.shape)) {
    const int64_t kg = conv->group_k(), taps = conv->r * conv->s * conv->group_c();
    const RowMajorMatrix weights = to_matrix(inputs.at(1));  // groups * taps x kg
    std::vector<double> out(static_cast<size_t>(conv->n * conv->p() * conv->q() * conv->k));
    for (int64_t group = 0; group < conv->groups; ++group) {
      const RowMajorMatrix columns = im2col(*conv, inputs.at(0), group);
      const RowMajorMatrix w = weights.middleRows(group * taps, taps);
      gemm_rows(columns, w, out.data() + group * kg, conv->k, threads);
    }
    return out;
  }
  const GemmShape gemm = op.gemm_view();
  std::vector<double> out(static_cast<size_t>(gemm.m * gemm.n));
  gemm_rows(to_matrix(inputs.at(0)), to_matrix(inputs.at(1)), out.data(), gemm.n, threads);
  return out;
}

std::vector<double> reference_at(const Op& op, uint64_t seed, const std::vector<int64_t>& positions) {
  TESSERA_ASSERT(!std::holds_alternative<PoolShape>(op.shape), "reference_at covers contractions");
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
  const auto* conv = std::get_if<ConvShape>(&op.shape);
  const GemmShape gemm = op.gemm_view();
  for (int64_t position : positions) {
    double sum = 0;
    if (conv) {
      // position = pixel * k + channel; the channel's group picks the input channels and weight rows.
      const int64_t channel = position % conv->k, pixel = position / conv->k;
      const int64_t group = channel / conv->group_k(), column = channel % conv->group_k();
      const int64_t image = pixel / (conv->p() * conv->q()), y = (pixel / conv->q()) % conv->p(),
                    z = pixel % conv->q();
      const int64_t cg = conv->group_c(), taps = conv->r * conv->s * cg;
      for (int64_t rr = 0; rr < conv->r; ++rr)
        for (int64_t ss = 0; ss < conv->s; ++ss) {
          const int64_t iy = y * conv->stride + rr * conv->dilation - conv->pad;
          const int64_t ix = z * conv->stride + ss * conv->dilation - conv->pad;
          if (iy < 0 || iy >= conv->h || ix < 0 || ix >= conv->w) continue;
          for (int64_t cc = 0; cc < cg; ++cc) {
            const int64_t x_at = ((image * conv->h + iy) * conv->w + ix) * conv->c + group * cg + cc;
            const int64_t w_at = (group * taps + (rr * conv->s + ss) * cg + cc) * conv->group_k() + column;
            sum += value(a_id, x_at) * value(w_id, w_at);
          }
        }
    } else {
      const int64_t row = position / gemm.n, col = position % gemm.n;
      for (int64_t k = 0; k < gemm.k; ++k)
        sum += value(a_id, row * gemm.k + k) * value(w_id, k * gemm.n + col);
    }
    values.push_back(sum);
  }
  return values;
}

}  // namespace tessera::ops
