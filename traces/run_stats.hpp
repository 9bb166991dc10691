// The figures of a simulated run (RunRecord) declared once, in the order report.json lists them: key (JSON
// key and CSV column), unit, meaning, member; whether the CSV has it; how the terminal table shows it. The
// JSON, CSV and table writers walk this list, so a new figure is a member of RunRecord and a line here.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "traces/report.hpp"

namespace tessera::traces {

struct RunStat {
  const char* key;
  const char* unit;
  const char* description;
  std::variant<int64_t RunRecord::*, double RunRecord::*, std::string RunRecord::*> member;
  bool csv = false;
  // A column of the table's rows: its heading, its width, and the value as it reads there (numbers only).
  const char* table_heading = nullptr;
  int table_width = 0;
  std::string (*table_cell)(double value) = nullptr;
};

const std::vector<RunStat>& run_stats();

}  // namespace tessera::traces
