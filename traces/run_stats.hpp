// The figures of a simulated run (RunRecord) in the order report.json lists them: the simulator's counters
// that the report shows (declared once in common/counters.hpp) and, among them, the figures derived from the
// counters and from the search (declared in run_stats.cpp, each after the counter it follows). The JSON, CSV
// and table writers walk run_figures(), so a counter reaches them all by its line in common/counters.hpp, and
// a derived figure by a member of RunRecord and its line in run_stats.cpp.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "traces/report.hpp"

namespace tessera::traces {

struct RunFigure {
  const char* key;  // the JSON key and CSV column
  const char* unit;
  const char* description;
  // A counter of RunRecord::counters, or a derived member of RunRecord.
  std::variant<int64_t RunCounters::*, int64_t RunRecord::*, double RunRecord::*, std::string RunRecord::*>
      member;
  bool csv = false;
  TableColumn table = kNoColumn;  // the terminal table's column, if any
};

const std::vector<RunFigure>& run_figures();

// Calls `use` with the figure's value in `run`: an int64_t, a double or a std::string.
template <class Use>
void with_value(const RunRecord& run, const RunFigure& figure, Use&& use) {
  std::visit(
      [&](auto member) {
        if constexpr (std::is_same_v<decltype(member), int64_t RunCounters::*>)
          use(run.counters.*member);
        else
          use(run.*member);
      },
      figure.member);
}

// A number figure's value as its table column writes it.
std::string table_cell(Cell cell, double value);

}  // namespace tessera::traces
