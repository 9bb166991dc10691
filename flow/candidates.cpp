#include "flow/candidates.hpp"

#include <algorithm>

namespace tessera::flow {

namespace {

// Two candidates of one tile and form choice: they differ only in how the tiles are spread over the cores,
// their loop order or their buffering.
bool same_tile(const mapper::Candidate& a, const mapper::Candidate& b) {
  const mapper::Mapping &x = a.mapping, &y = b.mapping;
  return x.tile_m == y.tile_m && x.tile_n == y.tile_n && x.tile_k == y.tile_k && x.choice == y.choice &&
         x.fusion == y.fusion;
}

// The first `count` of `ranked` to simulate, each of a tile none before it has (the simulated few are
// diverse: a tile the estimates get wrong is not simulated three times over its splits), topped up in rank
// order where the row has fewer tiles; the rest, in rank order, are the row's reserve.
void pick_diverse(const std::vector<mapper::Candidate>& ranked, size_t count, CandidateRow& row) {
  std::vector<bool> chosen(ranked.size(), false);
  size_t taken = 0;
  for (size_t i = 0; i < ranked.size() && taken < count; ++i) {
    bool repeats = false;
    for (size_t j = 0; j < i && !repeats; ++j) repeats = chosen[j] && same_tile(ranked[j], ranked[i]);
    if (!repeats) chosen[i] = true, ++taken;
  }
  for (size_t i = 0; i < ranked.size() && taken < count; ++i)
    if (!chosen[i]) chosen[i] = true, ++taken;
  for (size_t i = 0; i < ranked.size(); ++i) (chosen[i] ? row.candidates : row.reserve).push_back(ranked[i]);
}

}  // namespace

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
    pick_diverse(dataflow.best, simulated, row);
    pick.rows.push_back(std::move(row));
  }
  return pick;
}

}  // namespace tessera::flow
