// A workload: a named list of operators with one seed (configs/workloads/*.yaml), read through the op-kind
// registry, and its text form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "ops/op.hpp"

namespace tessera::ops {

// The most ops a workload lists: over a hundred times the largest shipped one (ResNet-50, 56 ops); the
// mapper, the lowering and the report size their work by the count.
constexpr size_t kMaxOps = 10'000;

struct Workload {
  std::string name;
  uint64_t seed = 0;
  std::vector<Op> ops;
};

Workload workload_from_yaml(const config::Document& document);
YAML::Node to_yaml(const Workload& workload);
// One op as its workload entry reads (name, kind, shape fields, dtype).
YAML::Node to_yaml(const Op& op);

}  // namespace tessera::ops
