#include "traces/run_stats.hpp"

#include <fmt/format.h>

#include "traces/text_format.hpp"

namespace tessera::traces {

namespace {

// A figure of the report that is no counter of the simulator, and the counter it follows in report.json
// (figures that follow the same counter keep the order of the list).
struct DerivedFigure {
  int64_t RunCounters::*follows;
  RunFigure figure;
};

const std::vector<DerivedFigure>& derived_figures() {
  static const std::vector<DerivedFigure> figures = {
      {&RunCounters::cycles,
       {"time_us", "us", "cycles at the machine clock", &RunRecord::time_us, true,
        TableColumn{"time_us", 10, Cell::two_decimals}}},
      {&RunCounters::cycles, {"macs", "MACs", "the op's multiply-accumulates", &RunRecord::macs, true}},
      {&RunCounters::active_pes,
       {"pe_utilization", "", "macs over the machine's PE-cycles", &RunRecord::pe_utilization, true,
        TableColumn{"util", 6, Cell::percent}}},
      {&RunCounters::active_pes,
       {"dram_bytes", "bytes", "read and written: dram_read_bytes + dram_write_bytes", &RunRecord::dram_bytes,
        true, TableColumn{"DRAM_MB", 9, Cell::megabytes}}},
      {&RunCounters::active_pes,
       {"dram_gbps", "GB/s", "DRAM bytes over the run's time", &RunRecord::dram_gbps, true,
        TableColumn{"GB/s", 7, Cell::one_decimal}}},
      {&RunCounters::noc_byte_hops,
       {"energy_uj", "uJ",
        "MACs, SRAM, DRAM and NoC traffic and every core's cycles at the machine's energy_pj costs",
        &RunRecord::energy_uj, true, TableColumn{"energy_uj", 10, Cell::two_decimals}}},
      {&RunCounters::noc_byte_hops,
       {"analytical_cycles", "cycles", "the cost model's estimate", &RunRecord::analytical_cycles, true}},
      {&RunCounters::noc_byte_hops,
       {"analytical_bound", "", "the resource the cost model finds bounding", &RunRecord::analytical_bound}},
      {&RunCounters::sram_hazards,
       {"candidates_simulated", "mappings", "of the dataflow's, simulated to pick this one",
        &RunRecord::candidates_simulated}},
      {&RunCounters::sram_hazards,
       {"candidates_stopped", "mappings",
        "of those simulated, stopped once their cycles passed the fewest of an earlier candidate of the "
        "dataflow (the mapper's order): they could no longer win",
        &RunRecord::candidates_stopped}},
      {&RunCounters::sram_hazards,
       {"fusion", "",
        "an epilogue's: fused (on each output tile in SRAM) or unfused (a vector pass over the stored "
        "output); empty for an op without one",
        &RunRecord::fusion, true}},
  };
  return figures;
}

}  // namespace

const std::vector<RunFigure>& run_figures() {
  static const std::vector<RunFigure> figures = [] {
    std::vector<RunFigure> list;
    for (const CounterDecl<RunCounters>& counter : run_counters()) {
      if (counter.shown != Shown::result)
        list.push_back(RunFigure{counter.name, counter.unit, counter.description, counter.member,
                                 counter.shown == Shown::csv, counter.table});
      for (const DerivedFigure& derived : derived_figures())
        if (derived.follows == counter.member) list.push_back(derived.figure);
    }
    return list;
  }();
  return figures;
}

std::string table_cell(Cell cell, double value) {
  switch (cell) {
    case Cell::grouped:
      return grouped(static_cast<int64_t>(value));
    case Cell::two_decimals:
      return fmt::format("{:.2f}", value);
    case Cell::one_decimal:
      return fmt::format("{:.1f}", value);
    case Cell::percent:
      return fmt::format("{:.1f}%", 100 * value);
    case Cell::megabytes:
      return megabytes(static_cast<int64_t>(value));
    case Cell::none:
      break;
  }
  return "";
}

}  // namespace tessera::traces
