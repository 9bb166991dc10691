#include "ops/kinds/fc.hpp"

#include <fmt/format.h>

#include "ops/op.hpp"

namespace tessera::ops {

namespace {

class FcKind : public OpKindOf<FcShape> {
 public:
  const char* name() const override { return "fc"; }
  std::vector<TensorDesc> tensors(const Op& op) const override {
    return gemm_tensors(op, op.as<FcShape>()->gemm());
  }
  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs,
                                int threads) const override {
    return gemm_reference(op.as<FcShape>()->gemm(), inputs, threads);
  }
  bool has_sampled_reference() const override { return true; }
  std::vector<double> reference_at(const Op& op, uint64_t seed,
                                   const std::vector<int64_t>& positions) const override {
    return gemm_reference_at(op, op.as<FcShape>()->gemm(), seed, positions);
  }

 protected:
  void visit_fields(FcShape& fc, FieldVisitor& visitor) const override {
    visitor.integer("batch", fc.batch, IntegerRule::positive, 1);
    visitor.integer("inputs", fc.inputs, IntegerRule::positive, std::nullopt);
    visitor.integer("outputs", fc.outputs, IntegerRule::positive, std::nullopt);
    visit_epilogue(visitor, fc.epilogue);
    visit_density(visitor, fc.density);
  }
  void check_dtype(const FcShape& fc, DType dtype, const FieldChecks& checks) const override {
    check_epilogue_dtype(fc.epilogue, dtype, checks);
    check_density(fc.density, checks);
  }
  std::string text_of(const FcShape& fc) const override {
    return fmt::format("{}x{}->{}{}{}", fc.batch, fc.inputs, fc.outputs, fc.epilogue.text(),
                       fc.density.text());
  }
  int64_t macs_of(const FcShape& fc) const override {
    const GemmShape gemm = fc.gemm();
    return gemm.m * gemm.n * gemm.k;
  }
};

}  // namespace

std::unique_ptr<OpKind> make_fc_kind() {
  return std::make_unique<FcKind>();
}

}  // namespace tessera::ops
