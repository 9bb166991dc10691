// The simulator's counters are declared once (common/counters.hpp) and every writer walks the declarations:
// each counter reaches report.json unless it is marked for the simulator's result only, the CSV where it is
// marked, and its unit's unit_counters; parts merge by each counter's rule; no two declarations share a name.
// The tests walk the lists, so a counter added there is covered without a change here.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/counters.hpp"
#include "traces/report.hpp"
#include "traces/run_stats.hpp"

namespace tessera::traces {
namespace {

// A distinct value for the i-th counter of a list, so that a writer taking the wrong member shows.
int64_t value_for(size_t index) {
  return 1'000'003 + 7 * static_cast<int64_t>(index);
}

// A report of one op and one row whose every run and unit counter holds its value_for.
Report report_with_every_counter() {
  RunRecord run;
  run.dataflow = "ws";
  run.winner = true;
  for (size_t i = 0; i < run_counters().size(); ++i) run.counters.*run_counters()[i].member = value_for(i);
  UnitBubbles unit;
  unit.unit = "core0,0.pe";
  unit.kind = "pe";
  for (size_t i = 0; i < unit_counters().size(); ++i) unit.counters.*unit_counters()[i].member = value_for(i);
  run.bubbles.push_back(unit);
  OpRecord op;
  op.name = "gemm";
  op.kind = "gemm";
  op.runs.push_back(run);
  op.winner = 0;
  Report report;
  report.ops.push_back(op);
  return report;
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, separator);) cells.push_back(cell);
  return cells;
}

TEST(Counters, NoTwoDeclarationsShareAName) {
  std::set<std::string> run_names, unit_names, figure_keys;
  for (const CounterDecl<RunCounters>& counter : run_counters())
    EXPECT_TRUE(run_names.insert(counter.name).second) << counter.name << " is declared twice";
  for (const CounterDecl<UnitCounters>& counter : unit_counters())
    EXPECT_TRUE(unit_names.insert(counter.name).second) << counter.name << " is declared twice";
  // A derived figure never takes a counter's key either.
  for (const RunFigure& figure : run_figures())
    EXPECT_TRUE(figure_keys.insert(figure.key).second) << figure.key << " is a report key twice";
}

TEST(Counters, EveryCounterReachesReportJsonUnlessMarkedForTheResultOnly) {
  const nlohmann::json report = nlohmann::json::parse(to_json(report_with_every_counter()));
  const nlohmann::json& row = report.at("ops").at(0).at("runs").at(0);
  for (size_t i = 0; i < run_counters().size(); ++i) {
    const CounterDecl<RunCounters>& counter = run_counters()[i];
    if (counter.shown == Shown::result)
      EXPECT_FALSE(row.contains(counter.name)) << counter.name;
    else
      EXPECT_EQ(row.value(counter.name, int64_t{-1}), value_for(i)) << counter.name;
  }
  const nlohmann::json& unit = row.at("unit_counters").at("core0,0.pe");
  for (size_t i = 0; i < unit_counters().size(); ++i)
    EXPECT_EQ(unit.value(unit_counters()[i].name, int64_t{-1}), value_for(i)) << unit_counters()[i].name;
}

TEST(Counters, EveryCounterMarkedForTheCsvIsItsColumn) {
  const std::vector<std::string> lines = split(to_csv(report_with_every_counter()), '\n');
  ASSERT_EQ(lines.size(), 2u);
  const std::vector<std::string> header = split(lines[0], ','), cells = split(lines[1], ',');
  for (size_t i = 0; i < run_counters().size(); ++i) {
    const CounterDecl<RunCounters>& counter = run_counters()[i];
    const auto column = std::find(header.begin(), header.end(), counter.name);
    if (counter.shown != Shown::csv) {
      EXPECT_EQ(column, header.end()) << counter.name << " is no CSV column";
      continue;
    }
    ASSERT_NE(column, header.end()) << counter.name;
    const auto at = static_cast<size_t>(column - header.begin());
    ASSERT_LT(at, cells.size());
    EXPECT_EQ(cells[at], std::to_string(value_for(i))) << counter.name;
  }
}

TEST(Counters, PartsMergeBySumOrMaxAsDeclared) {
  RunCounters whole, part;
  for (size_t i = 0; i < run_counters().size(); ++i) {
    whole.*run_counters()[i].member = 10;
    part.*run_counters()[i].member = static_cast<int64_t>(i % 2 == 0 ? 4 : 40);
  }
  merge_into(whole, part, run_counters());
  for (size_t i = 0; i < run_counters().size(); ++i) {
    const CounterDecl<RunCounters>& counter = run_counters()[i];
    const int64_t value = part.*counter.member;
    EXPECT_EQ(whole.*counter.member, counter.merge == Merge::sum ? 10 + value : std::max<int64_t>(10, value))
        << counter.name;
  }
}

}  // namespace
}  // namespace tessera::traces
