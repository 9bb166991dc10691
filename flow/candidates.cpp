#include "flow/candidates.hpp"

#include <algorithm>

namespace tessera::flow {

CandidatePick pick_candidates(const mapper::SearchResult& search, const CandidateRules& rules) {
  int64_t best_estimate = 0;
  for (const mapper::DataflowSearch& dataflow : search.per_dataflow)
    if (!dataflow.best.empty() && (best_estimate == 0 || dataflow.best.front().cost.cycles < best_estimate))
      best_estimate = dataflow.best.front().cost.cycles;
  CandidatePick pick;
  for (const mapper::DataflowSearch& dataflow : search.per_dataflow) {
    if (dataflow.best.empty()) continue;
    const double behind =
        static_cast<double>(dataflow.best.front().cost.cycles) / std::max<int64_t>(1, best_estimate);
    if (rules.prune_ratio > 0 && behind > rules.prune_ratio) {
      pick.pruned.emplace_back(dataflow.label(), behind);
      continue;
    }
    bool behind_sibling = false;
    for (const mapper::DataflowSearch& sibling : search.per_dataflow)
      behind_sibling =
          behind_sibling ||
          (sibling.dataflow == dataflow.dataflow &&
           (sibling.stage_kind != dataflow.stage_kind || sibling.fusion != dataflow.fusion) &&
           !sibling.best.empty() && sibling.best.front().cost.cycles < dataflow.best.front().cost.cycles);
    const size_t simulated = behind > rules.narrow_ratio || behind_sibling ? 1 : dataflow.best.size();
    CandidateRow row;
    row.label = dataflow.label();
    row.candidates.assign(dataflow.best.begin(),
                          dataflow.best.begin() + static_cast<std::ptrdiff_t>(simulated));
    pick.rows.push_back(std::move(row));
  }
  return pick;
}

}  // namespace tessera::flow
