// Operator semantics and workloads (DESIGN.md: ops/ knows nothing of hardware). A workload is a named list of
// operators with one seed; each operator names its shape and operand dtype.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "common/config.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"

namespace tessera::ops {

// O[m,n] = sum_k A[m,k] * W[k,n]
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

// conv2d over NHWC tensors (docs/design-notes.md, "Convolution"). groups == c is depthwise.
struct ConvShape {
  int64_t n = 1, c = 0, h = 0, w = 0;  // batch, input channels, input height and width
  int64_t k = 0, r = 0, s = 0;         // output channels, filter height and width
  int64_t stride = 1, pad = 0, dilation = 1, groups = 1;

  int64_t p() const { return (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1; }  // output height
  int64_t q() const { return (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1; }  // output width
  int64_t group_c() const { return c / groups; }
  int64_t group_k() const { return k / groups; }
  // Per group, the implicit GEMM: m = n*p*q output pixels, n = k/groups filters, k = r*s*c/groups taps.
  GemmShape group_gemm() const { return GemmShape{n * p() * q(), group_k(), r * s * group_c()}; }
};

// A fully connected layer: the GEMM m = batch, k = inputs, n = outputs.
struct FcShape {
  int64_t batch = 1, inputs = 0, outputs = 0;
  GemmShape gemm() const { return GemmShape{batch, outputs, inputs}; }
};

enum class PoolMode : uint8_t { max, avg };

// Pooling over NHWC (PyTorch's conventions: max pads with -inf, avg divides by the whole window).
struct PoolShape {
  int64_t n = 1, c = 0, h = 0, w = 0, r = 0, s = 0, stride = 1, pad = 0;
  PoolMode mode = PoolMode::max;
  int64_t p() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t q() const { return (w + 2 * pad - s) / stride + 1; }
};

struct Op {
  std::string name;
  int index = 0;  // position in the workload; fixes the tensor ids of its inputs (input_generator.hpp)
  DType dtype = DType::bf16;
  std::variant<GemmShape, ConvShape, FcShape, PoolShape> shape;
  SourceLocation where;

  const char* kind() const;
  int64_t macs() const;  // multiply-accumulates (pool: 0)
  // The GEMMs the op is, one per group (a GEMM and an fc: one; a conv: `groups`; a pool: none).
  int64_t gemm_count() const;
  GemmShape gemm_view() const;  // the GEMM of one group
  // The shape in one line: "512x3072x768" (m x n x k), "4x9216->4096" (fc), "4x227x227x3 k96 11x11/4 p0
  // g2" (conv: n x h x w x c, filters, window/stride, pad, groups, dilation), "max 3x3/2 on 4x55x55x96".
  std::string shape_text() const;
};

struct Workload {
  std::string name;
  uint64_t seed = 0;
  std::vector<Op> ops;
};

// One input or output tensor of an op, in the order the op's tensor ids use.
struct TensorDesc {
  std::string name;  // "A", "W", "O"
  DType dtype;
  int64_t rows;
  int64_t cols;
  uint32_t tensor_id;  // for inputs; outputs are not generated
  bool is_output;
};

std::vector<TensorDesc> tensors_of(const Op& op);

Workload workload_from_yaml(const config::Document& document);
YAML::Node to_yaml(const Workload& workload);
// One op as its workload entry reads (name, kind, shape fields, dtype), e.g. for a tile program's op line.
YAML::Node to_yaml(const Op& op);

const std::vector<std::string>& op_kind_names();

}  // namespace tessera::ops
