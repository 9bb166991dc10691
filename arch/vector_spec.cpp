#include "arch/vector_spec.hpp"

#include <fmt/format.h>

namespace tessera::arch {

std::optional<VectorSpecProblem> vector_spec_problem(const VectorSpec& spec) {
  if (spec.lanes < 1 || spec.lanes > kMaxVectorLanes)
    return VectorSpecProblem{"lanes", fmt::format("must be in [1, {}], got {}", kMaxVectorLanes, spec.lanes)};
  if (spec.special_per_cycle < 1 || spec.special_per_cycle > spec.lanes) {
    return VectorSpecProblem{"special_per_cycle", fmt::format("must be in [1, lanes] = [1, {}], got {}",
                                                              spec.lanes, spec.special_per_cycle)};
  }
  if (spec.latency_cycles < 0 || spec.latency_cycles > kMaxVectorLatencyCycles) {
    return VectorSpecProblem{"latency_cycles", fmt::format("must be in [0, {}], got {}",
                                                           kMaxVectorLatencyCycles, spec.latency_cycles)};
  }
  return std::nullopt;
}

void VectorSpec::validate(const SourceLocation& where, const std::string& path) {
  if (const auto problem = vector_spec_problem(*this))
    throw InputError(where, path + "." + problem->field, problem->message);
  tree_depth = 0;
  while ((1 << tree_depth) < lanes) ++tree_depth;  // lanes <= 2^16: no overflow
  special_issue_cycles = (lanes + special_per_cycle - 1) / special_per_cycle;
}

}  // namespace tessera::arch
