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
  // Candidates simulated per row at first (the search keeps more: refinement's reserve).
  int simulate_top = 3;
  // Refinement (docs/design-notes.md, "Refining where the estimate is wrong"): while the next unsimulated
  // candidate of a row estimates more than `refine_margin` below the row's best simulated cycles, the
  // estimates are off there by more than the margin, and if it estimates below the op's best simulated
  // cycles it may win: the next ones (as many as the row took at first) are simulated, at most
  // `refine_rounds` times. 0 rounds: never. Cycles objective only.
  double refine_margin = 0.02;
  int refine_rounds = 3;
  // The candidates the search keeps per row: those simulated at first and the refinement's reserve.
  int kept_per_row() const { return simulate_top * (1 + refine_rounds); }
};

// One row of the op's table: a dataflow (of one form) and the candidates simulated for it, best first.
struct CandidateRow {
  std::string label;  // "ws", "ws-direct", "rs"
  std::vector<mapper::Candidate> candidates;
  std::vector<mapper::Candidate> reserve;  // the row's next candidates in the mapper's order, for refinement
};

struct CandidatePick {
  std::vector<CandidateRow> rows;                      // in the search's order of dataflows
  std::vector<std::pair<std::string, double>> pruned;  // (label, best estimate / the op's best estimate)
};

CandidatePick pick_candidates(const mapper::SearchResult& search, const CandidateRules& rules);

}  // namespace tessera::flow
