#include "mapper/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "ops/kinds/conv2d.hpp"

namespace tessera::mapper {

bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.cost.cycles != b.cost.cycles) return a.cost.cycles < b.cost.cycles;
  if (a.cost.dram_bytes != b.cost.dram_bytes) return a.cost.dram_bytes < b.cost.dram_bytes;
  return a.index < b.index;
}

namespace {
void keep_best(std::vector<Candidate>& best, Candidate candidate, size_t limit) {
  if (best.size() == limit && !ranks_before(candidate, best.back())) return;
  auto place = std::upper_bound(best.begin(), best.end(), candidate, ranks_before);
  best.insert(place, std::move(candidate));
  if (best.size() > limit) best.pop_back();
}
}  // namespace

std::vector<Candidate> SearchResult::ranked() const {
  std::vector<Candidate> all;
  for (const DataflowSearch& search : per_dataflow)
    all.insert(all.end(), search.best.begin(), search.best.end());
  std::sort(all.begin(), all.end(), ranks_before);
  return all;
}

SearchResult search_gemm(const GemmProblem& problem, const arch::ArchSpec& spec,
                         const SearchOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const CostModel model(spec);
  const int threads = std::max(1, options.threads);
  const size_t limit = static_cast<size_t>(std::max(1, options.keep_per_dataflow));
  SearchResult result;
  for (arch::Dataflow dataflow : options.dataflows) {
    struct Worker {
      std::vector<Candidate> best;
      int64_t legal = 0;
    };
    std::vector<Worker> workers(threads);
    auto work = [&](int worker) {
      uint64_t within_split = 0;
      size_t current_split = ~size_t{0};
      workers[worker].legal = enumerate_mappings(
          problem, spec, dataflow, [&](size_t split) { return static_cast<int>(split % threads) == worker; },
          [&](const GemmMapping& mapping, size_t split) {
            if (split != current_split) current_split = split, within_split = 0;
            Candidate candidate{mapping, model.evaluate(problem, mapping),
                                (uint64_t{split} << 32) | within_split++};
            keep_best(workers[worker].best, std::move(candidate), limit);
          });
    };
    std::vector<std::thread> pool;
    for (int worker = 1; worker < threads; ++worker) pool.emplace_back(work, worker);
    work(0);
    for (auto& thread : pool) thread.join();

    DataflowSearch search;
    search.dataflow = dataflow;
    for (Worker& worker : workers) {
      search.legal += worker.legal;
      for (Candidate& candidate : worker.best) keep_best(search.best, std::move(candidate), limit);
    }
    if (search.legal == 0) search.why_none = why_infeasible(problem, spec, dataflow);
    result.evaluated += search.legal;
    result.per_dataflow.push_back(std::move(search));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (result.evaluated == 0) {
    std::string reasons;
    std::string field;
    for (const DataflowSearch& search : result.per_dataflow) {
      reasons += fmt::format("\n  {}: {}", arch::name_of(search.dataflow),
                             search.why_none.message.empty() ? "no mapping fits" : search.why_none.message);
      if (field.empty()) field = search.why_none.field;
    }
    const SourceLocation where = options.locate_field ? options.locate_field(field) : SourceLocation{};
    throw InputError(where, field, fmt::format("no legal mapping for {}:{}", options.op_description, reasons),
                     "give the core more SRAM (core.sram.kib), or choose another dataflow or machine");
  }
  return result;
}

SearchResult search_op(const ops::Op& op, const arch::ArchSpec& spec, const SearchOptions& options) {
  // The implicit GEMM with each packing of groups, then (for a conv or an fc) the direct 7-D loop nest.
  struct Form {
    GemmProblem problem;
    int64_t packed = 1;
    bool direct = false;
  };
  std::vector<Form> forms;
  for (int64_t packed : packings_of(op, std::max(spec.core.pe_array.rows, spec.core.pe_array.cols)))
    forms.push_back({problem_of(op, packed), packed, false});
  // A conv's direct form is searched for every dataflow. A gemm or fc is a 1x1 convolution over one row of
  // pixels: its direct WS/OS/IS would only repeat the implicit GEMM less freely (one output row), so it is
  // searched for RS alone, which has no other form (an RS machine runs them that way).
  const bool conv = op.as<ops::ConvShape>() != nullptr;
  const bool rs_requested = std::find(options.dataflows.begin(), options.dataflows.end(),
                                      arch::Dataflow::rs) != options.dataflows.end();
  const bool has_direct = conv || (gemm_of(op).has_value() && rs_requested);
  if (has_direct) forms.push_back({direct_problem_of(op), 1, true});
  SearchOptions direct_options = options;
  if (!conv) direct_options.dataflows = {arch::Dataflow::rs};
  const size_t limit = static_cast<size_t>(std::max(1, options.keep_per_dataflow));
  SearchResult merged;
  std::vector<DataflowSearch> implicit, direct;
  std::optional<InputError> implicit_error, direct_error;
  for (size_t f = 0; f < forms.size(); ++f) {
    const Form& form = forms[f];
    SearchResult result;
    try {
      result = search_gemm(form.problem, spec, form.direct ? direct_options : options);
    } catch (const InputError& error) {
      // A wider packing may not fit where a narrower one does; say why for the unpacked and direct forms.
      if (form.direct) direct_error = error;
      if (f == 0) implicit_error = error;
      continue;
    }
    merged.evaluated += result.evaluated;
    merged.seconds += result.seconds;
    std::vector<DataflowSearch>& into_form = form.direct ? direct : implicit;
    if (into_form.empty()) {
      into_form = result.per_dataflow;
      for (DataflowSearch& search : into_form)
        search.best.clear(), search.legal = 0, search.direct = form.direct;
    }
    for (size_t d = 0; d < result.per_dataflow.size(); ++d) {
      DataflowSearch& into = into_form[d];
      into.legal += result.per_dataflow[d].legal;
      for (Candidate candidate : result.per_dataflow[d].best) {
        candidate.mapping.packed_groups = static_cast<int>(form.packed);
        candidate.mapping.direct = form.direct;
        candidate.index |= static_cast<uint64_t>(f) << 56;  // ties break towards the implicit, unpacked form
        keep_best(into.best, std::move(candidate), limit);
      }
    }
  }
  // Row stationary exists only in the direct form: an op with one lists it there alone.
  for (DataflowSearch& search : implicit)
    if (!has_direct || search.dataflow != arch::Dataflow::rs)
      merged.per_dataflow.push_back(std::move(search));
  for (DataflowSearch& search : direct) merged.per_dataflow.push_back(std::move(search));
  if (merged.evaluated == 0) {
    const bool only_rs = std::all_of(options.dataflows.begin(), options.dataflows.end(),
                                     [](arch::Dataflow dataflow) { return dataflow == arch::Dataflow::rs; });
    // The implicit GEMM's reasons cover every dataflow a gemm or fc was searched for, RS included.
    if (direct_error && (only_rs || !implicit_error)) throw *direct_error;
    throw *implicit_error;
  }
  return merged;
}

}  // namespace tessera::mapper
