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

struct Op {
  std::string name;
  int index = 0;  // position in the workload; fixes the tensor ids of its inputs (input_generator.hpp)
  DType dtype = DType::bf16;
  std::variant<GemmShape> shape;
  SourceLocation where;

  const char* kind() const;
  int64_t macs() const;
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

const std::vector<std::string>& op_kind_names();

}  // namespace tessera::ops
