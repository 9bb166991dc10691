#include "mapper/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "mapper/op_stages.hpp"

namespace tessera::mapper {

double objective_value(Objective objective, const Candidate& candidate) {
  return objective_value(objective, static_cast<double>(candidate.cost.cycles), candidate.cost.energy_pj,
                         static_cast<double>(candidate.cost.dram_bytes));
}

bool ranks_before(const Candidate& a, const Candidate& b, Objective objective) {
  if (objective != Objective::cycles) {
    const double va = objective_value(objective, a), vb = objective_value(objective, b);
    if (va != vb) return va < vb;
  }
  if (a.cost.cycles != b.cost.cycles) return a.cost.cycles < b.cost.cycles;
  if (a.cost.dram_bytes != b.cost.dram_bytes) return a.cost.dram_bytes < b.cost.dram_bytes;
  return a.index < b.index;
}

void keep_best(std::vector<Candidate>& best, Candidate candidate, size_t limit, Objective objective) {
  if (best.size() == limit && !ranks_before(candidate, best.back(), objective)) return;
  auto place = std::upper_bound(
      best.begin(), best.end(), candidate,
      [objective](const Candidate& a, const Candidate& b) { return ranks_before(a, b, objective); });
  best.insert(place, std::move(candidate));
  if (best.size() > limit) best.pop_back();
}

namespace {

// a dominates b: no worse on every estimate and better on one, or equal on all three and earlier in the
// enumeration (so the front does not depend on the order the candidates are seen in, threads or not).
bool dominates(const Candidate& a, const Candidate& b) {
  const Cost &x = a.cost, &y = b.cost;
  if (x.cycles > y.cycles || x.energy_pj > y.energy_pj || x.dram_bytes > y.dram_bytes) return false;
  const bool equal = x.cycles == y.cycles && x.energy_pj == y.energy_pj && x.dram_bytes == y.dram_bytes;
  return !equal || a.index < b.index;
}

}  // namespace

bool dominated(const std::vector<Candidate>& front, const Candidate& candidate) {
  for (const Candidate& member : front)
    if (dominates(member, candidate)) return true;
  return false;
}

void keep_pareto(std::vector<Candidate>& front, const Candidate& candidate) {
  if (dominated(front, candidate)) return;
  front.erase(std::remove_if(front.begin(), front.end(),
                             [&](const Candidate& member) { return dominates(candidate, member); }),
              front.end());
  front.push_back(candidate);
}

std::vector<Candidate> SearchResult::pareto() const {
  std::vector<Candidate> front;
  for (const DataflowSearch& search : per_dataflow)
    for (const Candidate& candidate : search.front) keep_pareto(front, candidate);
  std::sort(front.begin(), front.end(),
            [](const Candidate& a, const Candidate& b) { return ranks_before(a, b, Objective::cycles); });
  return front;
}

std::vector<Candidate> SearchResult::ranked() const {
  std::vector<Candidate> all;
  for (const DataflowSearch& search : per_dataflow)
    all.insert(all.end(), search.best.begin(), search.best.end());
  std::sort(all.begin(), all.end(),
            [this](const Candidate& a, const Candidate& b) { return ranks_before(a, b, objective); });
  return all;
}

void require_pe_dtype(DType dtype, const arch::ArchSpec& spec, const SearchOptions& options) {
  if (spec.core.pe_array.supports(dtype)) return;
  const SourceLocation where =
      options.locate_field ? options.locate_field("core.pe_array.dtypes") : SourceLocation{};
  throw InputError(where, "core.pe_array.dtypes",
                   fmt::format("no legal mapping for {}: the PE array does not compute in {}",
                               options.op_description, name_of(dtype)),
                   "core.pe_array.dtypes lists the types the array computes: use one of them, or another "
                   "machine");
}

SearchResult search_op(const ops::Op& op, const arch::ArchSpec& spec, const SearchOptions& options) {
  const OpStages stages = stages_of(op, spec, options.dataflows);
  TESSERA_ASSERT(stages.mapped(), "search_op is asked only of ops with stages");
  SearchResult result = stages.search(spec, options);
  result.objective = options.objective;
  return result;
}

}  // namespace tessera::mapper
