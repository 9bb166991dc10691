// Search (DESIGN.md, "Dataflows"): every legal mapping of the requested dataflows is scored by the cost
// model; the best few of each dataflow are kept for simulation. Threads split the mapspace; the result does
// not depend on how many there are (ties break on the mapping's place in the enumeration).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "arch/spec.hpp"
#include "common/error.hpp"
#include "mapper/cost_model.hpp"
#include "mapper/mapping.hpp"
#include "mapper/mapspace.hpp"
#include "mapper/problem.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

struct Candidate {
  GemmMapping mapping;
  GemmCost cost;
  uint64_t index = 0;  // place in the enumeration: (split << 32) | order within the split
};

// Ranks by estimated cycles, then DRAM bytes, then enumeration order.
bool ranks_before(const Candidate& a, const Candidate& b);

struct SearchOptions {
  std::vector<arch::Dataflow> dataflows;
  int keep_per_dataflow = 8;
  int threads = 1;
  // Where a machine field is written, for the "no legal mapping" error (the CLI knows the YAML).
  std::function<SourceLocation(const std::string& field)> locate_field;
  std::string op_description;  // "ffn1 (gemm 512x3072x768 bf16)"
};

struct DataflowSearch {
  arch::Dataflow dataflow = arch::Dataflow::ws;
  bool direct = false;  // search_op: the direct form of a conv (else its implicit GEMM)
  std::string label() const { return dataflow_label(dataflow, direct); }
  int64_t legal = 0;
  std::vector<Candidate> best;  // ranked, at most keep_per_dataflow
  Infeasibility why_none;       // when legal == 0
};

struct SearchResult {
  std::vector<DataflowSearch> per_dataflow;
  int64_t evaluated = 0;
  double seconds = 0;
  std::vector<Candidate> ranked() const;  // every kept candidate, best first
};

// Throws InputError when no requested dataflow has a legal mapping, naming the constraint that kills the
// smallest tile.
SearchResult search_gemm(const GemmProblem& problem, const arch::ArchSpec& spec,
                         const SearchOptions& options);

// An op's search: its GEMM problem, and for a grouped conv every packing of groups into block-diagonal GEMMs
// (packings_of), merged per dataflow; each candidate's mapping says its packing. A conv or fc is also
// searched in its direct form: per_dataflow then lists the implicit GEMM's dataflows (WS, OS, IS) followed by
// the direct form's (WS, OS, IS and RS, direct = true), side by side. Throws like search_gemm when no form
// has a legal mapping.
SearchResult search_op(const ops::Op& op, const arch::ArchSpec& spec, const SearchOptions& options);

}  // namespace tessera::mapper
