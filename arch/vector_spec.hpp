// The vector unit of a core (DESIGN.md, "The vector unit"; docs/vector-unit.md defines the machine): lanes
// for simple operations, a narrower special-function pipe for transcendental ones, a lane tree for row
// reductions and a pipeline latency. A plain value checked and derived once by validate(); the closed form in
// arch/timing/vector_timing.hpp reads only this.
#pragma once

#include <optional>
#include <string>

#include "common/error.hpp"

namespace tessera::arch {

inline constexpr int kMaxVectorLanes = 65536;
inline constexpr int kMaxVectorLatencyCycles = 4096;

struct VectorSpec {
  int lanes = 0;  // elements per cycle of a simple op (add, sub, mul, max, compare, select, convert)
  int special_per_cycle = 0;  // elements per cycle of the special-function pipe (exp, reciprocal, rsqrt, ...)
  int latency_cycles = 0;     // pipeline depth: cycles an element's result takes after its last issue cycle

  // derived by validate()
  int tree_depth = 0;  // ceil(log2(lanes)): stages of the lane tree that reduces a row
  int special_issue_cycles =
      0;  // ceil(lanes / special_per_cycle): issue cycles of one special op on a vector

  // Checks the limits (lanes in [1, 65536], special_per_cycle in [1, lanes], latency_cycles in [0, 4096]) and
  // computes the derived fields. A broken limit is an InputError naming `path`.<field> at `where` (left empty
  // for a spec built in code).
  void validate(const SourceLocation& where = {}, const std::string& path = "core.vector");
};

// The first limit `spec` breaks: `field` is its key under core.vector, `message` what was expected and what
// was given. A YAML reader reports it at the key: reader.fail(problem->field, problem->message).
struct VectorSpecProblem {
  std::string field;
  std::string message;
};
std::optional<VectorSpecProblem> vector_spec_problem(const VectorSpec& spec);

}  // namespace tessera::arch
