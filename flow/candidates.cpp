#include "flow/candidates.hpp"

#include <algorithm>

namespace tessera::flow {

CandidatePick pick_candidates(const mapper::SearchResult& search, const CandidateRules& rules) {
  // Each dataflow's best estimate of the search's objective, against the best of all.
  auto estimate = [&](const mapper::DataflowSearch& dataflow) {
    return mapper::objective_value(search.objective, dataflow.best.front());
  };
  double best_estimate = 0;
  bool any = false;
  for (const mapper::DataflowSearch& dataflow : search.per_dataflow)
    if (!dataflow.best.empty() && (!any || estimate(dataflow) < best_estimate))
      best_estimate = estimate(dataflow), any = true;
  CandidatePick pick;
  for (const mapper::DataflowSearch& dataflow : search.per_dataflow) {
    if (dataflow.best.empty()) continue;
    const double behind = estimate(dataflow) / std::max(best_estimate, 1e-300);
    if (rules.prune_ratio > 0 && behind > rules.prune_ratio) {
      pick.pruned.emplace_back(dataflow.label(), behind);
      continue;
    }
    bool behind_sibling = false;
    for (const mapper::DataflowSearch& sibling : search.per_dataflow)
      behind_sibling = behind_sibling ||
                       (sibling.dataflow == dataflow.dataflow &&
                        (sibling.stage_kind != dataflow.stage_kind || sibling.fusion != dataflow.fusion) &&
                        !sibling.best.empty() && estimate(sibling) < estimate(dataflow));
    const size_t simulated = std::min(behind > rules.narrow_ratio || behind_sibling
                                          ? size_t{1}
                                          : static_cast<size_t>(std::max(1, rules.simulate_top)),
                                      dataflow.best.size());
    CandidateRow row;
    row.label = dataflow.label();
    const auto first_reserve = dataflow.best.begin() + static_cast<std::ptrdiff_t>(simulated);
    row.candidates.assign(dataflow.best.begin(), first_reserve);
    row.reserve.assign(first_reserve, dataflow.best.end());
    pick.rows.push_back(std::move(row));
  }
  return pick;
}

}  // namespace tessera::flow
