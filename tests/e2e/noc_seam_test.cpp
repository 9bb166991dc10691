// The NoC seam (issue "forms in family rooms", item 7): a machine's `noc.impl` picks the network's model from
// a registry (arch/noc.hpp), and the simulator's fabric (routes, multicast trees, link calendars, DRAM attach
// points) and the mapper's cost model (a DRAM round trip's hops, the hottest link's share) both ask that one
// object. The test registers a double — a crossbar, every route one link of its own — and sees both ask it
// and the run move the way a crossbar would move it.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "arch/noc.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "flow/run_workload.hpp"
#include "ops/workload.hpp"
#include "traces/report.hpp"

namespace tessera {
namespace {

std::atomic<int> trees_built{0}, round_trips_asked{0}, hottest_asked{0};

// Every router linked to every other by a link of its own; DRAM channel c at router c.
class CrossbarNoc final : public arch::NocModel {
 public:
  explicit CrossbarNoc(const arch::ArchSpec& spec) : NocModel(spec), cores_(spec.mesh.cores()) {}
  int links() const override { return cores_ * cores_; }
  void append_route(int from, int to, std::vector<int>& route) const override {
    if (from != to) route.push_back(from * cores_ + to);
  }
  int channel_router(int channel) const override { return channel % cores_; }
  arch::MulticastTree multicast_tree(int from, const std::vector<int>& destinations) const override {
    ++trees_built;
    return NocModel::multicast_tree(from, destinations);
  }
  double average_dram_hops() const override {
    ++round_trips_asked;
    return NocModel::average_dram_hops();
  }
  double hottest_link_share(int used) const override {
    ++hottest_asked;
    return NocModel::hottest_link_share(used);
  }

 private:
  int cores_;
};

const bool registered = [] {
  arch::register_noc("crossbar-test", [](const arch::ArchSpec& spec) {
    return std::unique_ptr<arch::NocModel>(std::make_unique<CrossbarNoc>(spec));
  });
  return true;
}();

traces::RunRecord best_row(const arch::ArchSpec& spec) {
  const ops::Workload workload = ops::workload_from_yaml(config::load_text(
      "name: noc\nseed: 3\nops:\n  - {name: g, kind: gemm, m: 256, n: 256, k: 256, dtype: bf16}\n",
      "noc.yaml"));
  flow::RunSettings settings;
  settings.dataflows = spec.core.pe_array.dataflows;
  settings.timing_only = true;
  const flow::WorkloadRun run = flow::run_workload(workload, spec, settings);
  EXPECT_EQ(run.report.ops.size(), 1u);
  return run.report.ops.front().best();
}

TEST(NocSeam, TheRegistryNamesTheModelsAndTheReaderRefusesAnotherName) {
  ASSERT_TRUE(registered);
  const std::vector<std::string> names = arch::noc_impl_names();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names.front(), "mesh");
  EXPECT_EQ(load_arch("mesh4x4").noc.impl, "mesh");  // the default
  std::string text = config::to_yaml_text(arch::to_yaml(load_arch("mesh4x4")));
  const size_t at = text.find("impl: mesh");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 10, "impl: torus");
  try {
    arch::arch_from_yaml(config::load_text(text, "torus.yaml"));
    ADD_FAILURE() << "a machine with noc.impl: torus was read";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("torus.yaml:"), std::string::npos) << message;
    EXPECT_NE(message.find("mesh"), std::string::npos) << message;
    EXPECT_NE(message.find("crossbar-test"), std::string::npos) << message;
  }
}

TEST(NocSeam, TheFabricAndTheCostModelAskTheMachinesModelAndTheRunMovesAsACrossbarWould) {
  const arch::ArchSpec mesh = load_arch("mesh4x4");
  arch::ArchSpec crossbar = mesh;
  crossbar.noc.impl = "crossbar-test";
  const int round_trips_before = round_trips_asked;
  EXPECT_DOUBLE_EQ(arch::dram_round_trip_hops(crossbar), 15.0 / 16.0);  // one hop but to its own router
  EXPECT_GT(round_trips_asked, round_trips_before) << "the round trip's hops are the crossbar's answer";
  EXPECT_GT(arch::dram_round_trip_hops(mesh), 1.0);
  const int trees_before = trees_built, hottest_before = hottest_asked;
  const traces::RunRecord on_crossbar = best_row(crossbar);
  EXPECT_GT(trees_built, trees_before) << "the simulator's fabric asked the crossbar for its multicast trees";
  EXPECT_GT(hottest_asked, hottest_before) << "the cost model asked the crossbar for its hottest link";
  ASSERT_GT(on_crossbar.counters.noc_bytes, 0);
  // On the crossbar no byte crosses more than one link (on the 4x4 mesh most cross several: SystemC
  // elaborates once a process, so that run is another test's).
  EXPECT_LE(on_crossbar.counters.noc_byte_hops, on_crossbar.counters.noc_bytes);
}

}  // namespace
}  // namespace tessera
