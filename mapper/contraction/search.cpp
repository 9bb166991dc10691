// The contraction family's search (mapper/contraction/search.hpp): one stage's mapspace scored on threads,
// and an op's stages searched side by side, fused and unfused, their rows merged per stage kind.
#include "mapper/contraction/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <system_error>
#include <thread>

#include "mapper/contraction/cost_model.hpp"
#include "mapper/contraction/mapspace.hpp"
#include "mapper/kit/tiling.hpp"
#include "mapper/kit/vector_stage.hpp"

namespace tessera::mapper {

namespace {

// A search thread's kept candidates, in a cache line of its own: the probe is written for every mapping
// scored.
struct alignas(64) SearchWorker {
  std::vector<Candidate> best, front;
  int64_t legal = 0;
  Candidate probe;  // a scored mapping's cost and index, its mapping not copied (left empty)
};

// Runs work(0) .. work(threads - 1), each but the first on a thread of its own. A thread the system refuses:
// its share runs here after this thread's own (never a joinable thread destroyed; the result is the same,
// the candidates ranked by their index).
template <typename Work>
void run_on_threads(int threads, Work& work) {
  std::vector<std::thread> pool;
  std::vector<int> refused;
  for (int worker = 1; worker < threads; ++worker) {
    try {
      pool.emplace_back(work, worker);
    } catch (const std::system_error&) {
      refused.push_back(worker);
    }
  }
  work(0);
  for (int worker : refused) work(worker);
  for (auto& thread : pool) thread.join();
}

// A search with no legal mapping of any dataflow: why not, for each.
[[noreturn]] void throw_no_legal_mapping(const SearchResult& result, const SearchOptions& options) {
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

}  // namespace

SearchResult search_stage(const std::shared_ptr<const ContractionStage>& stage, const arch::ArchSpec& spec,
                          const SearchOptions& options, const EpilogueSearch& epilogue) {
  const auto started = std::chrono::steady_clock::now();
  const int threads = std::max(1, options.threads);
  const size_t limit = static_cast<size_t>(std::max(1, options.keep_per_dataflow));
  SearchResult result;
  for (arch::Dataflow dataflow : options.dataflows) {
    std::vector<SearchWorker> workers(threads);
    auto work = [&](int worker) {
      // A cost model of its own: its instruction timer's cache of RS profiles is behind a mutex, which two
      // threads sharing one model took turns at for every RS mapping scored (the search ran slower on two
      // threads than on one).
      const CostModel model(spec);
      uint64_t within_split = 0;
      size_t current_split = ~size_t{0};
      SearchWorker& mine = workers[worker];
      // The tile last scored and its loop nests: the orders of one tile come one after another, and two
      // whose loops of more than one trip run in the same order are the same loop nest — the same tiles
      // visited in the same sequence, the same program — so only the first is a candidate (the others
      // would fill the simulated top few with copies of one program; they still count as scored).
      std::array<int64_t, 5> scored_tile{-1, -1, -1, -1, -1};
      std::array<int64_t, 3> trips{};  // the scored tile's loop trips along m, n, k
      uint64_t nests_seen = 0;         // bit loop_nest_key (three base-4 digits: < 64) of each nest scored
      const ContractionShape& shape = stage->shape();
      workers[worker].legal = enumerate_mappings(
          stage, spec, dataflow, [&](size_t split) { return static_cast<int>(split % threads) == worker; },
          [&](const Mapping& mapping, size_t split) {
            if (split != current_split) current_split = split, within_split = 0;
            const std::array<int64_t, 5> tile = {
                static_cast<int64_t>(split), mapping.tile_m, mapping.tile_n, mapping.tile_k,
                (mapping.double_buffer_inputs ? 2 : 0) + (mapping.double_buffer_output ? 1 : 0)};
            if (tile != scored_tile) {
              scored_tile = tile, nests_seen = 0;
              trips = {DimPartition(shape.m, mapping.tile_m, mapping.split_m).max_tile_count(),
                       DimPartition(shape.n, mapping.tile_n, mapping.split_n).max_tile_count(),
                       DimPartition(shape.k, mapping.tile_k, mapping.split_k).max_tile_count()};
            }
            const uint64_t nest = uint64_t{1} << loop_nest_key(trips, mapping.order);
            const uint64_t index = (uint64_t{split} << 32) | within_split++;
            if (nests_seen & nest) return;
            nests_seen |= nest;
            mine.probe.cost = model.evaluate(mapping);
            mine.probe.index = index;
            // The mapping is copied only when kept: a copy takes its shared stage and epilogue, whose
            // reference counts every thread would otherwise update for every mapping scored.
            const bool best =
                mine.best.size() < limit || ranks_before(mine.probe, mine.best.back(), options.objective);
            const bool front = !dominated(mine.front, mine.probe);
            if (!best && !front) return;
            Candidate candidate{mapping, mine.probe.cost, mine.probe.index};
            if (front) keep_pareto(mine.front, candidate);
            if (best) keep_best(mine.best, std::move(candidate), limit, options.objective);
          },
          epilogue);
    };
    run_on_threads(threads, work);

    DataflowSearch search;
    search.dataflow = dataflow;
    search.stage_kind = stage->kind();
    search.label_text = stage->dataflow_label(dataflow);
    if (epilogue.work) {
      search.fusion = epilogue.fusion;
      search.label_text += std::string(" ") + name_of(epilogue.fusion);
    }
    for (SearchWorker& worker : workers) {
      search.legal += worker.legal;
      for (Candidate& candidate : worker.best)
        keep_best(search.best, std::move(candidate), limit, options.objective);
      for (const Candidate& candidate : worker.front) keep_pareto(search.front, candidate);
    }
    if (search.legal == 0) search.why_none = why_infeasible(stage, spec, dataflow);
    result.evaluated += search.legal;
    result.per_dataflow.push_back(std::move(search));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.objective = options.objective;

  if (result.evaluated == 0) throw_no_legal_mapping(result, options);
  return result;
}

namespace {

// Per stage kind (and fusion), in the order the forms list them: its merged rows, and the error of its first
// form.
struct FormGroup {
  std::string kind;
  Fusion fusion = Fusion::none;
  std::shared_ptr<const ContractionStage> stage;  // the first form's
  std::vector<DataflowSearch> rows;
  std::optional<InputError> first_error;
};

// The ways an op's epilogue is searched: fused, then unfused with the best mapping of its pass over the
// output; with an output path that applies the whole epilogue, also in the PE array (array). Without an
// epilogue, none.
std::vector<EpilogueSearch> epilogue_searches(const ContractionForms& stages, const arch::ArchSpec& spec,
                                              const SearchOptions& options) {
  if (!stages.epilogue) return {EpilogueSearch{}};
  std::vector<EpilogueSearch> fusions;
  if (spec.core.vector) {
    fusions.push_back(EpilogueSearch{stages.epilogue, Fusion::fused, nullptr});
    try {
      const SearchResult pass = search_vector(VectorStage::epilogue_pass(*stages.epilogue), spec, options);
      fusions.push_back(EpilogueSearch{stages.epilogue, Fusion::unfused,
                                       std::make_shared<const Mapping>(pass.ranked().front().mapping)});
    } catch (const InputError&) {
      // No pass fits the core's SRAM: only the fused form is searched.
    }
  }
  if (stages.epilogue->runs_in(spec.core.pe_array))
    fusions.push_back(EpilogueSearch{stages.epilogue, Fusion::array, nullptr});
  return fusions;
}

// No form of any kind has a legal mapping: the error of the first kind's first form, whose reasons cover
// every dataflow it was searched for; when only row stationary was asked for, that of a kind that can run
// it, which says more.
[[noreturn]] void throw_first_error(const std::vector<FormGroup>& groups, const SearchOptions& options) {
  const bool only_rs = std::all_of(options.dataflows.begin(), options.dataflows.end(),
                                   [](arch::Dataflow dataflow) { return dataflow == arch::Dataflow::rs; });
  const InputError* chosen = groups.front().first_error ? &*groups.front().first_error : nullptr;
  for (size_t g = 1; g < groups.size(); ++g)
    if (groups[g].first_error && (only_rs ? groups[g].stage->can_run(arch::Dataflow::rs) : !chosen))
      chosen = &*groups[g].first_error;
  TESSERA_ASSERT(chosen, "a search with no legal mapping has a reason");
  throw *chosen;
}

// The forms of one op searched side by side (contraction_forms).
SearchResult search_forms(const ContractionForms& stages, const arch::ArchSpec& spec,
                          const SearchOptions& options) {
  const size_t limit = static_cast<size_t>(std::max(1, options.keep_per_dataflow));
  const std::vector<EpilogueSearch> fusions = epilogue_searches(stages, spec, options);
  std::vector<FormGroup> groups;
  SearchResult merged;
  size_t searched = 0;
  for (const EpilogueSearch& fusion : fusions)
    for (size_t f = 0; f < stages.forms.size(); ++f, ++searched) {
      const StageForm& form = stages.forms[f];
      auto group = std::find_if(groups.begin(), groups.end(), [&](const FormGroup& candidate) {
        return candidate.kind == form.stage->kind() && candidate.fusion == fusion.fusion;
      });
      const bool first_of_kind = group == groups.end();
      if (first_of_kind) {
        groups.push_back(FormGroup{form.stage->kind(), fusion.fusion, form.stage, {}, std::nullopt});
        group = groups.end() - 1;
      }
      SearchOptions form_options = options;
      form_options.dataflows = form.dataflows;
      SearchResult result;
      try {
        result = search_stage(form.stage, spec, form_options, fusion);
      } catch (const InputError& error) {
        // A wider packing may not fit where a narrower one does; say why for the first form of each kind.
        if (first_of_kind) group->first_error = error;
        continue;
      }
      merged.evaluated += result.evaluated;
      merged.seconds += result.seconds;
      if (group->rows.empty()) {
        group->rows = result.per_dataflow;
        for (DataflowSearch& search : group->rows)
          search.best.clear(), search.front.clear(), search.legal = 0;
      }
      for (size_t d = 0; d < result.per_dataflow.size(); ++d) {
        DataflowSearch& into = group->rows[d];
        into.legal += result.per_dataflow[d].legal;
        for (Candidate candidate : result.per_dataflow[d].best) {
          candidate.index |= static_cast<uint64_t>(searched) << 56;  // ties break towards the earlier form
          keep_best(into.best, std::move(candidate), limit, options.objective);
        }
        for (Candidate candidate : result.per_dataflow[d].front) {
          candidate.index |= static_cast<uint64_t>(searched) << 56;
          keep_pareto(into.front, candidate);
        }
      }
    }
  // A dataflow a stage kind can never run (row stationary on a GEMM) is listed where another kind lists it.
  auto listed_elsewhere = [&](const FormGroup& group, arch::Dataflow dataflow) {
    for (const FormGroup& other : groups)
      if (other.kind != group.kind)
        for (const StageForm& form : stages.forms)
          if (form.stage->kind() == other.kind &&
              std::find(form.dataflows.begin(), form.dataflows.end(), dataflow) != form.dataflows.end())
            return true;
    return false;
  };
  for (FormGroup& group : groups)
    for (DataflowSearch& search : group.rows)
      if (group.stage->can_run(search.dataflow) || !listed_elsewhere(group, search.dataflow))
        merged.per_dataflow.push_back(std::move(search));
  if (merged.evaluated == 0) throw_first_error(groups, options);
  return merged;
}

}  // namespace

OpStages contraction_forms(const ops::Op& op, const arch::ArchSpec& spec, std::vector<StageForm> forms) {
  ContractionForms stages;
  stages.forms = std::move(forms);
  // A contraction's epilogue runs on the vector unit, fused or not: without one it cannot run at all.
  stages.epilogue = EpilogueWork::of(op);
  if (stages.epilogue && !spec.core.vector && !stages.epilogue->runs_in(spec.core.pe_array)) {
    // Steps, or only the rounding to a narrower output type (`out`), which the vector unit does too.
    const bool rounds_only = stages.epilogue->rounds_only();
    throw InputError(
        op.where, op.name,
        rounds_only
            ? fmt::format("{} ({} {}) stores its output as {} (out), rounded on the vector unit, and "
                          "machine {} has none",
                          op.name, op.kind_name(), op.shape_text(), name_of(stages.epilogue->out_dtype()),
                          spec.name)
            : fmt::format("{} ({} {}) has an epilogue ({}), and machine {} has no vector unit to run it",
                          op.name, op.kind_name(), op.shape_text(), stages.epilogue->text(), spec.name),
        std::string("give the machine's cores one: core.vector: {lanes, special_per_cycle, latency_cycles} "
                    "(docs/vector-unit.md), or drop ") +
            (rounds_only ? "`out` (the output then stays in the accumulator type)" : "the epilogue"));
  }
  OpStages op_stages;
  if (stages.forms.empty()) return op_stages;
  op_stages.search = [stages](const arch::ArchSpec& on, const SearchOptions& options) {
    return search_forms(stages, on, options);
  };
  return op_stages;
}

}  // namespace tessera::mapper
