#include "ops/epilogue.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.hpp"
#include "ops/input_generator.hpp"
#include "ops/op.hpp"
#include "ops/reference_kernels.hpp"
#include "ops/vector_kernels.hpp"

namespace tessera::ops {

namespace {

constexpr uint32_t kBiasSlot = 2, kResidualSlot = 3, kUpSlot = 4;

// `tile` is the step's tile operand: the residual's or the up projection's element.
double step_value(EpilogueStep step, double value, double bias, double tile) {
  switch (step) {
    case EpilogueStep::swiglu:
      return activate(ElementFn::silu, value) * tile;
    case EpilogueStep::bias:
      return value + bias;
    case EpilogueStep::residual:
      return value + tile;
    default:
      TESSERA_ASSERT(is_activation(step), "an epilogue's step is an epilogue's function");
      return activate(step, value);
  }
}

}  // namespace

const std::vector<std::string>& epilogue_step_names() {
  return element_fn_names(kInEpilogue);
}

const std::vector<std::string>& output_type_names() {
  static const std::vector<std::string> names = {"accumulator", "bf16", "fp16", "fp32"};
  return names;
}

const std::vector<std::string>& partial_sum_type_names() {
  static const std::vector<std::string> names = {"accumulator", "bf16", "fp16"};
  return names;
}

std::optional<DType> Epilogue::partial_sums() const {
  switch (psum) {
    case PartialSumType::accumulator:
      return std::nullopt;
    case PartialSumType::bf16:
      return DType::bf16;
    case PartialSumType::fp16:
      return DType::fp16;
  }
  return std::nullopt;
}

DType Epilogue::output(DType operand) const {
  switch (out) {
    case OutputType::accumulator:
      return partials(operand);
    case OutputType::bf16:
      return DType::bf16;
    case OutputType::fp16:
      return DType::fp16;
    case OutputType::fp32:
      return DType::fp32;
  }
  return accumulator_of(operand);
}

DType numerics_dtype(DType operand, DType output) {
  const bool narrower = (output == DType::bf16 || output == DType::fp16) && operand == DType::fp32;
  return narrower ? output : operand;
}

void check_epilogue_dtype(const Epilogue& epilogue, DType dtype, const FieldChecks& checks) {
  if (!epilogue.empty() && dtype == DType::int8)
    checks.fail("epilogue", "an int8 contraction's int32 output takes no epilogue",
                "the vector unit computes in floating point: use bf16, fp16 or fp32 operands");
  if (epilogue.out != OutputType::accumulator && dtype == DType::int8)
    checks.fail("out", "an int8 contraction stores its output as int32 (its accumulator)",
                "leave `out` out, or use bf16, fp16 or fp32 operands");
  if (const std::optional<DType> psum = epilogue.partial_sums(); psum && !takes_partial_sums(dtype, *psum))
    checks.fail("psum",
                fmt::format("{} partial sums take 16-bit operands (bf16 or fp16), not {}", name_of(*psum),
                            name_of(dtype)),
                dtype == DType::int8 ? "leave `psum` out: an int8 contraction's partial sums are int32"
                                     : "leave `psum` out: the partial sums then stay fp32");
  if (epilogue.has(EpilogueStep::residual) && epilogue.has(EpilogueStep::swiglu))
    checks.fail("epilogue", "an epilogue reads one tile beside its output: residual or swiglu, not both",
                "add the residual in an op of its own (an elementwise add)");
}

bool Epilogue::has(EpilogueStep step) const {
  return std::find(steps.begin(), steps.end(), step) != steps.end();
}

std::string Epilogue::text() const {
  std::string text;
  if (!steps.empty()) text = " +" + joined_names(steps);
  if (out != OutputType::accumulator) text += " ->" + output_type_names()[static_cast<size_t>(out)];
  if (psum != PartialSumType::accumulator)
    text += " psum=" + partial_sum_type_names()[static_cast<size_t>(psum)];
  return text;
}

void visit_epilogue(FieldVisitor& visitor, Epilogue& epilogue) {
  visit_element_fns(visitor, "epilogue", epilogue.steps, kInEpilogue);
  visit_choice(visitor, "out", epilogue.out, output_type_names(), std::optional(OutputType::accumulator));
  visit_choice(visitor, "psum", epilogue.psum, partial_sum_type_names(),
               std::optional(PartialSumType::accumulator));
}

void add_epilogue_tensors(std::vector<TensorDesc>& tensors, const Epilogue& epilogue, int op_index,
                          DType output, int64_t rows, int64_t cols) {
  const auto index = static_cast<uint32_t>(op_index);
  if (epilogue.has(EpilogueStep::bias))
    tensors.push_back({"B", output, 1, cols, tensor_id(index, kBiasSlot), false});
  if (epilogue.has(EpilogueStep::residual))
    tensors.push_back({"R", output, rows, cols, tensor_id(index, kResidualSlot), false});
  if (epilogue.has(EpilogueStep::swiglu))
    tensors.push_back({"U", output, rows, cols, tensor_id(index, kUpSlot), false});
}

void apply_epilogue(const Epilogue& epilogue, std::vector<double>& out, int64_t rows, int64_t cols,
                    const std::vector<HostTensor>& inputs, size_t contraction_inputs) {
  if (epilogue.empty()) return;
  size_t next = contraction_inputs;
  const HostTensor* bias = epilogue.has(EpilogueStep::bias) ? &inputs.at(next++) : nullptr;
  const HostTensor* tile = epilogue.reads_tile() ? &inputs.at(next++) : nullptr;  // R or U
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col) {
      double& value = out[static_cast<size_t>(row * cols + col)];
      for (EpilogueStep step : epilogue.steps)
        value = step_value(step, value, bias ? bias->value(col) : 0.0,
                           tile ? tile->value(row * cols + col) : 0.0);
    }
}

double apply_epilogue_at(const Epilogue& epilogue, double value, int64_t row, int64_t col, int64_t cols,
                         DType output, uint64_t seed, int op_index) {
  const auto index = static_cast<uint32_t>(op_index);
  for (EpilogueStep step : epilogue.steps) {
    const double bias =
        step == EpilogueStep::bias ? generated_value(output, seed, tensor_id(index, kBiasSlot), col) : 0.0;
    const double tile =
        step == EpilogueStep::residual || step == EpilogueStep::swiglu
            ? generated_value(output, seed,
                              tensor_id(index, step == EpilogueStep::residual ? kResidualSlot : kUpSlot),
                              row * cols + col)
            : 0.0;
    value = step_value(step, value, bias, tile);
  }
  return value;
}

}  // namespace tessera::ops
