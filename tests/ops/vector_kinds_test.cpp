// The vector op kinds (softmax, layernorm, rmsnorm, elementwise): the workload spelling of issue "Ops as
// stage graphs" parses with its defaults, every bad field is a located error with its message, and the vector
// unit's fp32 kernels (ops/vector_kernels.hpp) agree with the kinds' float64 references within the fp32
// tolerance — and a softmax without its max subtraction does not, on large logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/config.hpp"
#include "ops/kinds/elementwise.hpp"
#include "ops/kinds/norm.hpp"
#include "ops/kinds/softmax.hpp"
#include "ops/numerics.hpp"
#include "ops/op.hpp"
#include "ops/reference.hpp"
#include "ops/vector_kernels.hpp"
#include "ops/workload.hpp"

namespace tessera::ops {
namespace {

Workload parse(const std::string& text) {
  return workload_from_yaml(config::load_text(text, "w.yaml"));
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

std::vector<float> widened(const HostTensor& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.elements()));
  widen_to_float(tensor.dtype, tensor.bytes.data(), tensor.elements(), values.data());
  return values;
}

HostTensor as_fp32(const std::vector<float>& values, int64_t rows, int64_t cols) {
  HostTensor tensor(DType::fp32, rows, cols);
  std::memcpy(tensor.bytes.data(), values.data(), values.size() * sizeof(float));
  return tensor;
}

const std::string kIssueSpelling = R"(name: vector
seed: 5
ops:
  - {name: ln,   kind: layernorm,   rows: 512,  cols: 768, eps: 1.0e-5, dtype: bf16}
  - {name: rms,  kind: rmsnorm,     rows: 512,  cols: 4096, eps: 1.0e-6, dtype: bf16}
  - {name: sm,   kind: softmax,     rows: 6144, cols: 512, dtype: fp32}
  - {name: act,  kind: elementwise, rows: 512,  cols: 3072, fn: gelu, dtype: bf16}
  - {name: norm_default, kind: layernorm, rows: 2, cols: 8, dtype: fp32}
  - {name: rms_default, kind: rmsnorm, rows: 2, cols: 8, dtype: fp16}
  - {name: causal, kind: softmax, rows: 4, cols: 16, scale: 0.125, causal: true, dtype: bf16}
)";

}  // namespace

TEST(VectorKinds, TheIssuesSpellingParsesWithItsDefaultsAndReadsBackFromItsResolvedForm) {
  const Workload workload = parse(kIssueSpelling);
  ASSERT_EQ(workload.ops.size(), 7u);
  EXPECT_EQ(workload.ops[0].as<NormShape>()->eps, 1e-5);
  EXPECT_EQ(workload.ops[4].as<NormShape>()->eps, 1e-5);  // PyTorch's LayerNorm default
  EXPECT_EQ(workload.ops[5].as<NormShape>()->eps, 1e-6);  // Llama's RMSNorm default
  EXPECT_EQ(workload.ops[2].as<SoftmaxShape>()->scale, 1.0);
  EXPECT_EQ(workload.ops[2].as<SoftmaxShape>()->causal, Causal::no);
  EXPECT_EQ(workload.ops[6].as<SoftmaxShape>()->causal, Causal::yes);
  EXPECT_EQ(workload.ops[3].as<ElementwiseShape>()->fn, ElementwiseFn::gelu);
  EXPECT_EQ(workload.ops[6].shape_text(), "4x16 scale 0.125 causal");
  EXPECT_EQ(workload.ops[0].shape_text(), "512x768 eps 1e-05");
  const Workload again =
      workload_from_yaml(config::load_text(config::to_yaml_text(to_yaml(workload)), "r.yaml"));
  for (size_t i = 0; i < workload.ops.size(); ++i)
    EXPECT_TRUE(identity_of(again.ops[i]) == identity_of(workload.ops[i])) << workload.ops[i].name;
  // Tensors: inputs with the generator's ids, the output in the storage type.
  const std::vector<TensorDesc> ln = tensors_of(workload.ops[0]);
  ASSERT_EQ(ln.size(), 4u);
  EXPECT_EQ(ln[1].name, "G");
  EXPECT_EQ(ln[1].rows, 1);
  EXPECT_EQ(ln[2].name, "B");
  EXPECT_EQ(ln[3].dtype, DType::bf16);
  EXPECT_EQ(tensors_of(workload.ops[1]).size(), 3u);  // rmsnorm has no beta
}

TEST(VectorKinds, BadFieldsAreLocatedErrorsThatSayWhatIsExpected) {
  const std::string head = "name: w\nseed: 1\nops:\n";
  EXPECT_EQ(error_of(head + "  - {name: s, kind: softmax, rows: 4, cols: 0, dtype: fp32}\n"),
            "w.yaml:4:45: ops[0].cols: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(
      error_of(head + "  - {name: e, kind: elementwise, rows: 4, cols: 8, fn: gleu, dtype: fp32}\n"),
      "w.yaml:4:56: ops[0].fn: 'gleu' is not one of add, mul, bias, relu, gelu, gelu_tanh, silu or swiglu; "
      "did you mean 'gelu'?"
      "\n  hint: names are case-sensitive; pick one of those listed");
  EXPECT_EQ(error_of(head + "  - {name: s, kind: softmax, rows: 4, cols: 8, dtype: int8}\n"),
            "w.yaml:4:55: ops[0].dtype: 'int8' is not one of fp32, bf16 or fp16"
            "\n  hint: names are case-sensitive; pick one of those listed");
  EXPECT_EQ(
      error_of(head + "  - {name: s, kind: softmax, rows: 9, cols: 8, causal: true, dtype: fp32}\n"),
      "w.yaml:4:36: ops[0].rows: a causal softmax of 9 rows over 8 columns leaves its first rows no column\n"
      "  hint: the queries are the last rows of the keys: rows may not exceed cols");
  EXPECT_EQ(error_of(head + "  - {name: n, kind: layernorm, rows: 4, cols: 8, eps: 0, dtype: fp32}\n"),
            "w.yaml:4:55: ops[0].eps: expected a positive number, got 0"
            "\n  hint: this field is a rate or a size: above 0");
  EXPECT_EQ(error_of(head + "  - {name: n, kind: rmsnorm, rows: 4, cols: 8, esp: 1, dtype: fp32}\n"),
            "w.yaml:4:48: ops[0].esp: unknown key; did you mean 'eps'?\n  hint: the README lists every field "
            "of this file");
}

// The fp32 kernel the simulator runs against the float64 reference of the same op, on the same inputs.
TEST(VectorKinds, TheVectorUnitsFp32KernelsMatchTheFloat64ReferencesWithinTheFp32Tolerance) {
  const Workload workload = parse(R"(name: w
seed: 9
ops:
  - {name: sm, kind: softmax, rows: 33, cols: 517, scale: 3.0, dtype: fp32}
  - {name: causal, kind: softmax, rows: 7, cols: 40, causal: true, dtype: fp32}
  - {name: ln, kind: layernorm, rows: 17, cols: 300, dtype: fp32}
  - {name: rms, kind: rmsnorm, rows: 17, cols: 300, dtype: fp32}
)");
  for (const Op& op : workload.ops) {
    const std::vector<HostTensor> inputs = generate_inputs(op, workload.seed);
    const std::vector<double> expected = reference_output(op, inputs, 1);
    const std::vector<float> x = widened(inputs[0]);
    std::vector<float> out(x.size());
    int64_t rows = 0, cols = 0;
    if (const SoftmaxShape* softmax = op.as<SoftmaxShape>()) {
      rows = softmax->rows, cols = softmax->cols;
      softmax_rows(x.data(), out.data(), rows, cols, static_cast<float>(softmax->scale),
                   softmax->causal == Causal::yes ? std::optional<int64_t>(cols - rows) : std::nullopt);
    } else {
      const NormShape& norm = *op.as<NormShape>();
      rows = norm.rows, cols = norm.cols;
      const std::vector<float> gamma = widened(inputs[1]);
      if (op.kind_name() == std::string("layernorm"))
        layernorm_rows(x.data(), gamma.data(), widened(inputs[2]).data(), out.data(), rows, cols,
                       static_cast<float>(norm.eps));
      else
        rmsnorm_rows(x.data(), gamma.data(), out.data(), rows, cols, static_cast<float>(norm.eps));
    }
    const NumericsResult numerics = compare_output(as_fp32(out, rows, cols), expected, DType::fp32, "cpu");
    EXPECT_TRUE(numerics.pass) << op.name << ": rel_l2_err " << numerics.rel_l2_err;
    EXPECT_LT(numerics.rel_l2_err, 1e-6) << op.name;
  }
}

TEST(VectorKinds, ACausalSoftmaxZeroesTheColumnsAfterEachQuerysPositionAndEachRowSumsToOne) {
  const Workload workload = parse(
      "name: w\nseed: 2\nops:\n"
      "  - {name: s, kind: softmax, rows: 3, cols: 5, causal: true, dtype: fp32}\n");
  const Op& op = workload.ops[0];
  const std::vector<double> reference = reference_output(op, generate_inputs(op, 2), 1);
  // Row i sees columns 0 .. i + 2.
  for (int64_t row = 0; row < 3; ++row) {
    double sum = 0;
    for (int64_t col = 0; col < 5; ++col) {
      const double value = reference[static_cast<size_t>(row * 5 + col)];
      if (col > row + 2) {
        EXPECT_EQ(value, 0.0) << row << "," << col;
      }
      sum += value;
    }
    EXPECT_NEAR(sum, 1.0, 1e-15) << row;
  }
}

// Logits of up to 200 overflow an fp32 exponential (e^88.7 is the largest float): the max subtraction is what
// keeps the kernel finite, and the numerics check catches a kernel without it.
TEST(VectorKinds, ASoftmaxWithoutMaxSubtractionFailsTheNumericsCheckOnLargeLogits) {
  const Workload workload = parse(
      "name: w\nseed: 4\nops:\n"
      "  - {name: s, kind: softmax, rows: 8, cols: 64, scale: 200.0, dtype: fp32}\n");
  const Op& op = workload.ops[0];
  const std::vector<HostTensor> inputs = generate_inputs(op, 4);
  const std::vector<double> expected = reference_output(op, inputs, 1);
  const std::vector<float> x = widened(inputs[0]);
  std::vector<float> stable(x.size()), naive(x.size());
  softmax_rows(x.data(), stable.data(), 8, 64, 200.0f, std::nullopt);
  for (int64_t row = 0; row < 8; ++row) {
    float sum = 0;
    for (int64_t col = 0; col < 64; ++col) sum += std::exp(200.0f * x[row * 64 + col]);
    for (int64_t col = 0; col < 64; ++col) naive[row * 64 + col] = std::exp(200.0f * x[row * 64 + col]) / sum;
  }
  EXPECT_TRUE(compare_output(as_fp32(stable, 8, 64), expected, DType::fp32, "cpu").pass);
  EXPECT_FALSE(compare_output(as_fp32(naive, 8, 64), expected, DType::fp32, "cpu").pass);
}

TEST(VectorKinds, EveryActivationInFp32AgreesWithItsFloat64FormAndItsDefinition) {
  for (const float x : {-6.0f, -1.5f, -0.25f, 0.0f, 0.3f, 1.0f, 4.0f}) {
    for (ElementFn activation : element_fns(kInEpilogue)) {
      if (!is_activation(activation)) continue;
      const double exact = activate(activation, static_cast<double>(x));
      EXPECT_NEAR(activate(activation, x), exact, 2e-7 * (1 + std::abs(exact)))
          << name_of(activation) << " " << x;
    }
    EXPECT_EQ(activate(ElementFn::relu, static_cast<double>(x)), x > 0 ? x : 0.0);
    EXPECT_NEAR(activate(ElementFn::silu, static_cast<double>(x)),
                x / (1 + std::exp(-static_cast<double>(x))), 1e-15);
    EXPECT_NEAR(activate(ElementFn::gelu, static_cast<double>(x)),
                0.5 * x * (1 + std::erf(x / std::sqrt(2.0))), 1e-15);
  }
  // The tanh form approximates the erf form to about 1e-3 (Hendrycks and Gimpel).
  EXPECT_NEAR(activate(ElementFn::gelu_tanh, 1.0), activate(ElementFn::gelu, 1.0), 2e-4);
}

TEST(VectorKinds, ElementwiseReferencesApplyTheirFunctionToTheirInputs) {
  const Workload workload = parse(R"(name: w
seed: 6
ops:
  - {name: add, kind: elementwise, rows: 3, cols: 4, fn: add, dtype: fp32}
  - {name: bias, kind: elementwise, rows: 3, cols: 4, fn: bias, dtype: fp32}
  - {name: swiglu, kind: elementwise, rows: 3, cols: 4, fn: swiglu, dtype: bf16}
  - {name: relu, kind: elementwise, rows: 3, cols: 4, fn: relu, dtype: fp16}
)");
  for (const Op& op : workload.ops) {
    const std::vector<HostTensor> inputs = generate_inputs(op, 6);
    const std::vector<double> out = reference_output(op, inputs, 1);
    for (int64_t i = 0; i < 12; ++i) {
      const double x = inputs[0].value(i);
      double expected = 0;
      if (op.name == "add") expected = x + inputs[1].value(i);
      if (op.name == "bias") expected = x + inputs[1].value(i % 4);
      if (op.name == "swiglu") expected = x / (1 + std::exp(-x)) * inputs[1].value(i);
      if (op.name == "relu") expected = x > 0 ? x : 0;
      EXPECT_DOUBLE_EQ(out[static_cast<size_t>(i)], expected) << op.name << " " << i;
    }
  }
}

}  // namespace tessera::ops
