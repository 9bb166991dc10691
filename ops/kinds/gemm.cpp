#include "ops/kinds/gemm.hpp"

#include <fmt/format.h>

#include "common/large_memory.hpp"
#include "ops/input_generator.hpp"
#include "ops/op.hpp"
#include "ops/reference_kernels.hpp"

namespace tessera::ops {

std::vector<TensorDesc> gemm_tensors(const Op& op, const GemmShape& gemm) {
  const auto index = static_cast<uint32_t>(op.index);
  std::vector<TensorDesc> tensors = {
      {"A", op.dtype, gemm.m, gemm.k, tensor_id(index, 0), false, std::nullopt, 0, gemm.density.input},
      {"W", op.dtype, gemm.k, gemm.n, tensor_id(index, 1), false},
  };
  add_epilogue_tensors(tensors, gemm.epilogue, op.index, gemm.epilogue.partials(op.dtype), gemm.m, gemm.n);
  tensors.push_back(
      {"O", gemm.epilogue.output(op.dtype), gemm.m, gemm.n, 0, true, std::nullopt, 0, gemm.density.output});
  return tensors;
}

std::vector<double> gemm_reference(const GemmShape& gemm, const std::vector<HostTensor>& inputs,
                                   int threads) {
  std::vector<double> out = large_zeroed<double>(static_cast<size_t>(gemm.m * gemm.n));
  gemm_rows(to_matrix(inputs.at(0)), to_matrix(inputs.at(1)), out.data(), gemm.n, threads);
  apply_epilogue(gemm.epilogue, out, gemm.m, gemm.n, inputs, 2);
  return out;
}

std::vector<double> gemm_reference_at(const Op& op, const GemmShape& gemm, uint64_t seed,
                                      const std::vector<int64_t>& positions) {
  const auto index = static_cast<uint32_t>(op.index);
  const uint32_t a_id = tensor_id(index, 0), w_id = tensor_id(index, 1);
  std::vector<double> values;
  values.reserve(positions.size());
  for (int64_t position : positions) {
    double sum = 0;
    const int64_t row = position / gemm.n, col = position % gemm.n;
    for (int64_t k = 0; k < gemm.k; ++k)
      sum += generated_value(op.dtype, seed, a_id, row * gemm.k + k) *
             generated_value(op.dtype, seed, w_id, k * gemm.n + col);
    values.push_back(apply_epilogue_at(gemm.epilogue, sum, row, col, gemm.n, gemm.epilogue.partials(op.dtype),
                                       seed, op.index));
  }
  return values;
}

namespace {

class GemmKind : public OpKindOf<GemmShape> {
 public:
  const char* name() const override { return "gemm"; }
  std::vector<TensorDesc> tensors(const Op& op) const override {
    return gemm_tensors(op, *op.as<GemmShape>());
  }
  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs,
                                int threads) const override {
    return gemm_reference(*op.as<GemmShape>(), inputs, threads);
  }
  bool has_sampled_reference() const override { return true; }
  std::vector<double> reference_at(const Op& op, uint64_t seed,
                                   const std::vector<int64_t>& positions) const override {
    return gemm_reference_at(op, *op.as<GemmShape>(), seed, positions);
  }

 protected:
  void visit_fields(GemmShape& gemm, FieldVisitor& visitor) const override {
    visitor.integer("m", gemm.m, IntegerRule::positive, std::nullopt);
    visitor.integer("n", gemm.n, IntegerRule::positive, std::nullopt);
    visitor.integer("k", gemm.k, IntegerRule::positive, std::nullopt);
    visit_epilogue(visitor, gemm.epilogue);
    visit_density(visitor, gemm.density);
  }
  void check_dtype(const GemmShape& gemm, DType dtype, const FieldChecks& checks) const override {
    check_epilogue_dtype(gemm.epilogue, dtype, checks);
    check_density(gemm.density, checks);
  }
  std::string text_of(const GemmShape& gemm) const override {
    return fmt::format("{}x{}x{}{}{}", gemm.m, gemm.n, gemm.k, gemm.epilogue.text(), gemm.density.text());
  }
  int64_t macs_of(const GemmShape& gemm) const override { return gemm.m * gemm.n * gemm.k; }
};

}  // namespace

std::unique_ptr<OpKind> make_gemm_kind() {
  return std::make_unique<GemmKind>();
}

}  // namespace tessera::ops
