// Which of an op's ranked candidates are simulated (docs/design-notes.md, "Side by side"): a dataflow whose
// best estimate is far behind the op's best is not simulated at all (the report lists it with its ratio); one
// somewhat behind, or behind the other form of the same dataflow, has only its best candidate simulated; the
// others their best few. The cost model's ranking within a dataflow matters only near the top.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mapper/search.hpp"

namespace tessera::flow {

struct CandidateRules {
  // A dataflow whose best estimate is more than this many times the op's best estimate is not simulated; 0
  // simulates every dataflow.
  double prune_ratio = 4.0;
  // ... more than this many times, or behind the same dataflow on another kind of stage (a conv's implicit
  // GEMM or direct form) or with its epilogue the other way (fused, unfused): only its best candidate is
  // simulated.
  double narrow_ratio = 1.2;
};

// One row of the op's table: a dataflow (of one form) and the candidates simulated for it, best first.
struct CandidateRow {
  std::string label;  // "ws", "ws-direct", "rs"
  std::vector<mapper::Candidate> candidates;
};

struct CandidatePick {
  std::vector<CandidateRow> rows;                      // in the search's order of dataflows
  std::vector<std::pair<std::string, double>> pruned;  // (label, best estimate / the op's best estimate)
};

CandidatePick pick_candidates(const mapper::SearchResult& search, const CandidateRules& rules);

}  // namespace tessera::flow
