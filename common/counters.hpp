// Every counter the simulator keeps, declared once (STYLE.md, "Stats and reports"; gem5's ADD_STAT): one line
// of the lists below gives a counter its name (the member, the report.json key and the CSV column), its unit,
// how the counters of parts combine into the whole's, where the report shows it, and what it counts. The
// simulator increments the typed member on its hot path; the fork-and-merge of parallel runs
// (sim/parallel_runs.cpp), the report's JSON, CSV and table writers (traces/) walk the declarations. A new
// counter is a line here and the line of the unit that counts it (docs/extending.md, "A counter").
//
// The lists live in common/ because both the simulator (sim/, which fills them) and the report (traces/,
// which writes them) hold them, and neither may include the other (DESIGN.md, "Folders"); flow/ copies them
// whole from one to the other.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace tessera {

// How the counters of parts (a run's units) combine into the whole's: summed, or the largest part's.
enum class Merge { sum, max };

// Where a counter shows: only in the simulator's result (a derived figure of the report reads it), in
// report.json, or in report.json and the CSV.
enum class Shown { result, report, csv };

// How the terminal table writes a figure: not at all, or as a column with its heading, width and cell format.
enum class Cell { none, grouped, two_decimals, one_decimal, percent, megabytes };
struct TableColumn {
  const char* heading = nullptr;
  int width = 0;
  Cell cell = Cell::none;
};
constexpr TableColumn kNoColumn{};

// COUNTER(name, unit, merge, shown, table column, description), in the order report.json lists a run's keys
// (its derived figures sit among them: traces/run_stats.cpp).
#define TESSERA_RUN_COUNTERS(COUNTER)                                                                       \
  COUNTER(cycles, "cycles", max, csv, (TableColumn{"cycles", 13, Cell::grouped}),                           \
          "the run's length at the machine clock: its last completion, rounded up to a whole cycle")        \
  COUNTER(pe_macs, "MACs", sum, report, kNoColumn,                                                          \
          "multiply-accumulates the PE arrays performed: more than the op's when packed groups multiply "   \
          "zeros")                                                                                          \
  COUNTER(active_pes, "PEs", max, report, kNoColumn,                                                        \
          "the most PEs of one core's array a fold (RS: a round) used at once")                             \
  COUNTER(dram_read_bytes, "bytes", sum, result, kNoColumn,                                                 \
          "read from DRAM (an accumulating store's read included)")                                         \
  COUNTER(dram_write_bytes, "bytes", sum, result, kNoColumn, "written to DRAM")                             \
  COUNTER(sram_read_bytes, "bytes", sum, csv, kNoColumn, "read from SRAM banks, all cores")                 \
  COUNTER(sram_write_bytes, "bytes", sum, csv, kNoColumn, "written to SRAM banks, all cores")               \
  COUNTER(noc_bytes, "bytes", sum, csv, kNoColumn, "payload that entered the mesh, once per destination")   \
  COUNTER(noc_byte_hops, "byte-hops", sum, report, kNoColumn, "bytes times the mesh links they crossed")    \
  COUNTER(bank_conflict_ticks, "ticks", sum, result, kNoColumn,                                             \
          "delay SRAM bank arbitration added, summed over transfers")                                       \
  COUNTER(instructions, "instructions", sum, report, kNoColumn, "the tile program's")                       \
  COUNTER(sram_hazards, "instructions", sum, report, kNoColumn,                                             \
          "PE instructions whose operand tiles another unit overwrote while the array read them (a race "   \
          "the program lets happen; functional runs only, the result then uses the new bytes, as hardware " \
          "would)")

// A unit's counters (report.json's unit_counters, those not 0); the same columns.
#define TESSERA_UNIT_COUNTERS(COUNTER)                                                                  \
  COUNTER(instructions, "instructions", sum, report, kNoColumn, "the unit's instructions run")          \
  COUNTER(macs, "MACs", sum, report, kNoColumn, "PE array: multiply-accumulates performed")             \
  COUNTER(folds, "folds", sum, report, kNoColumn, "PE array: folds (RS: rounds)")                       \
  COUNTER(active_pes, "PEs", max, report, kNoColumn, "PE array: the most PEs one fold or round used")   \
  COUNTER(bytes_moved, "bytes", sum, report, kNoColumn, "DMA and NoC engines: payload bytes delivered") \
  COUNTER(bursts, "bursts", sum, report, kNoColumn, "DMA and NoC engines: bursts issued")               \
  COUNTER(vector_elements, "elements", sum, report, kNoColumn,                                          \
          "vector unit: tile elements its instructions computed")

#define TESSERA_COUNTER_MEMBER(name, unit, merge, shown, table, description) int64_t name = 0;

// A run's counters (sim::RunResult, traces::RunRecord): typed integers, one member per line above.
struct RunCounters {
  TESSERA_RUN_COUNTERS(TESSERA_COUNTER_MEMBER)
};

// One unit's counters (sim::UnitResult, traces::UnitBubbles).
struct UnitCounters {
  TESSERA_UNIT_COUNTERS(TESSERA_COUNTER_MEMBER)
};

#undef TESSERA_COUNTER_MEMBER

template <class Counters>
struct CounterDecl {
  const char* name;
  const char* unit;
  const char* description;
  Merge merge;
  Shown shown;
  TableColumn table;
  int64_t Counters::*member;
};

#define TESSERA_COUNT_ONE(...) +1
constexpr std::size_t kRunCounters = 0 TESSERA_RUN_COUNTERS(TESSERA_COUNT_ONE);
constexpr std::size_t kUnitCounters = 0 TESSERA_UNIT_COUNTERS(TESSERA_COUNT_ONE);
#undef TESSERA_COUNT_ONE

// The declarations, in the order of the lists.
const std::array<CounterDecl<RunCounters>, kRunCounters>& run_counters();
const std::array<CounterDecl<UnitCounters>, kUnitCounters>& unit_counters();

// `part`'s counters combined into `whole`'s by each counter's merge rule.
template <class Counters, std::size_t N>
void merge_into(Counters& whole, const Counters& part, const std::array<CounterDecl<Counters>, N>& decls) {
  for (const CounterDecl<Counters>& counter : decls) {
    int64_t& into = whole.*counter.member;
    const int64_t value = part.*counter.member;
    into = counter.merge == Merge::sum ? into + value : (value > into ? value : into);
  }
}

}  // namespace tessera
