// A form added from outside mapper/ through mapper/form.hpp alone (issue "forms in family rooms", item 1):
// the test's own form for an elementwise op — all rows on one core, in blocks of its own choosing — replaces
// the op kind's decomposition, and the op is searched (its rows are the toy's), simulated, checked against
// the reference and reported with the toy's label and fields. Its arithmetic is a vector stage's: the toy
// lowers through that form's interface, with a mapping of its own making.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/config.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "flow/run_workload.hpp"
#include "mapper/cost.hpp"
#include "mapper/form.hpp"
#include "mapper/kit/vector_stage.hpp"
#include "mapper/op_stages.hpp"
#include "mapper/search.hpp"
#include "ops/workload.hpp"
#include "traces/report.hpp"

namespace tessera {
namespace {

// The toy's choice: rows per block on its one core.
struct ToyChoice {
  int64_t block_rows = 0;
  bool operator==(const ToyChoice& other) const { return block_rows == other.block_rows; }
};

class ToyForm final : public mapper::Form {
 public:
  explicit ToyForm(std::shared_ptr<const mapper::VectorStage> inner) : inner_(std::move(inner)) {}
  const char* family() const override { return "toy"; }

  mapper::SearchResult search(const std::shared_ptr<const mapper::Form>& self, const arch::ArchSpec& spec,
                              const mapper::SearchOptions& options) const override {
    mapper::SearchResult result;
    mapper::DataflowSearch row;
    row.stage_kind = "toy";
    row.label_text = "toy";
    for (int64_t rows : {1, 2, 4}) {
      mapper::Mapping mapping;
      mapping.form = self;
      mapping.choice = ToyChoice{rows};
      mapper::Candidate candidate;
      candidate.mapping = mapping;
      candidate.cost = estimate(mapping, spec);
      candidate.index = static_cast<uint64_t>(row.legal++);
      mapper::keep_pareto(row.front, candidate);
      mapper::keep_best(row.best, candidate, static_cast<size_t>(options.keep_per_dataflow),
                        options.objective);
    }
    result.evaluated = row.legal;
    result.per_dataflow.push_back(row);
    return result;
  }
  mapper::Cost estimate(const mapper::Mapping& mapping, const arch::ArchSpec& spec) const override {
    return inner_->estimate(inner_mapping(mapping), spec);
  }
  arch::Program lower(const ops::Op& op, uint64_t seed, const mapper::Mapping& mapping,
                      const arch::ArchSpec& spec, const std::string& program_name) const override {
    return inner_->lower(op, seed, inner_mapping(mapping), spec, program_name);
  }
  std::string label(const mapper::Mapping&) const override { return "toy"; }
  std::string describe(const mapper::Mapping& mapping) const override {
    return "toy blocks of " + std::to_string(mapping.choice.as<ToyChoice>().block_rows) + " rows";
  }
  NamedValues fields(const mapper::Mapping& mapping, const mapper::Cost&) const override {
    return {{"form", std::string("toy")}, {"block_rows", mapping.choice.as<ToyChoice>().block_rows}};
  }

 private:
  // The vector stage's mapping the toy's stands for: every row on core 0, in the toy's blocks.
  mapper::Mapping inner_mapping(const mapper::Mapping& mapping) const {
    mapper::Mapping inner;
    inner.form = inner_;
    inner.split_m = 1;
    inner.tile_n = inner_->units();
    inner.tile_m = mapping.choice.as<ToyChoice>().block_rows;
    inner.double_buffer_inputs = inner.double_buffer_output = false;
    return inner;
  }
  std::shared_ptr<const mapper::VectorStage> inner_;
};

mapper::OpStages toy_stages(const ops::Op& op, const arch::ArchSpec&, const std::vector<arch::Dataflow>&) {
  return mapper::one_form(std::make_shared<const ToyForm>(mapper::VectorStage::of(op)));
}

TEST(ToyForm, AFormAddedThroughTheInterfaceAloneIsSearchedSimulatedCheckedAndReported) {
  const mapper::Decomposition elementwise = mapper::replace_decomposition("elementwise", &toy_stages);
  const arch::ArchSpec spec = load_arch("default");
  const ops::Workload workload =
      ops::workload_from_yaml(config::load_text("name: toy\nseed: 5\nops:\n  - {name: act, kind: "
                                                "elementwise, fn: gelu, rows: 8, cols: 64, dtype: bf16}\n",
                                                "toy.yaml"));
  flow::RunSettings settings;
  settings.dataflows = spec.core.pe_array.dataflows;
  settings.candidates.simulate_top = 3;
  const flow::WorkloadRun run = flow::run_workload(workload, spec, settings);
  mapper::replace_decomposition("elementwise", elementwise);

  ASSERT_EQ(run.report.ops.size(), 1u);
  const traces::OpRecord& op = run.report.ops.front();
  EXPECT_EQ(op.mapper_candidates, 3);
  ASSERT_EQ(op.runs.size(), 1u);  // one row: the toy's
  const traces::RunRecord& row = op.runs.front();
  EXPECT_EQ(row.dataflow, "toy");
  EXPECT_EQ(row.candidates_simulated, 3);
  EXPECT_GT(row.counters.cycles, 0);
  ASSERT_FALSE(row.numerics.empty());
  for (const traces::Numerics& numerics : row.numerics) EXPECT_TRUE(numerics.pass) << numerics.reference;
  EXPECT_EQ(row.mapping.description.rfind("toy blocks of ", 0), 0u) << row.mapping.description;

  const nlohmann::json report = nlohmann::json::parse(traces::to_json(run.report));
  const nlohmann::json& mapping = report.at("ops").at(0).at("runs").at(0).at("mapping");
  EXPECT_EQ(mapping.at("form"), "toy");
  EXPECT_GT(mapping.at("block_rows").get<int64_t>(), 0);
  EXPECT_FALSE(mapping.contains("cores") || mapping.contains("tile")) << mapping.dump();
}

}  // namespace
}  // namespace tessera
