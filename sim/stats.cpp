#include "sim/stats.hpp"

namespace tessera::sim {

const std::vector<CounterDecl<RunResult>>& run_counters() {
  static const std::vector<CounterDecl<RunResult>> counters = {
      {"cycles", "cycles", "the run's length: its last completion, rounded up to a whole cycle",
       &RunResult::cycles},
      {"instructions", "instructions", "the program's instructions", &RunResult::instructions},
      {"macs", "MACs", "multiply-accumulates the PE arrays performed", &RunResult::macs},
      {"active_pes", "PEs", "the most PEs of one core's array a fold or round used", &RunResult::active_pes},
      {"sram_hazards", "instructions",
       "PE instructions whose operand tiles another unit overwrote while the array read them (a race the "
       "program lets happen; functional runs only, the result then uses the new bytes, as hardware would)",
       &RunResult::sram_hazards},
  };
  return counters;
}

const std::vector<CounterDecl<TrafficCounters>>& traffic_counters() {
  static const std::vector<CounterDecl<TrafficCounters>> counters = {
      {"dram_read_bytes", "bytes", "read from DRAM (an accumulating store's read included)",
       &TrafficCounters::dram_read_bytes},
      {"dram_write_bytes", "bytes", "written to DRAM", &TrafficCounters::dram_write_bytes},
      {"sram_read_bytes", "bytes", "read from SRAM banks, all cores", &TrafficCounters::sram_read_bytes},
      {"sram_write_bytes", "bytes", "written to SRAM banks, all cores", &TrafficCounters::sram_write_bytes},
      {"noc_bytes", "bytes", "payload that entered the mesh, counted once per destination",
       &TrafficCounters::noc_bytes},
      {"noc_byte_hops", "byte-hops", "bytes times the mesh links they crossed",
       &TrafficCounters::noc_byte_hops},
      {"bank_conflict_ticks", "ticks", "delay SRAM bank arbitration added, summed over transfers",
       &TrafficCounters::bank_conflict_ticks},
  };
  return counters;
}

const std::vector<CounterDecl<UnitCounters>>& unit_counters() {
  static const std::vector<CounterDecl<UnitCounters>> counters = {
      {"instructions", "instructions", "the unit's instructions run", &UnitCounters::instructions},
      {"macs", "MACs", "PE array: multiply-accumulates performed", &UnitCounters::macs},
      {"folds", "folds", "PE array: folds (RS: rounds)", &UnitCounters::folds},
      {"active_pes", "PEs", "PE array: the most PEs one fold or round used", &UnitCounters::active_pes},
      {"bytes_moved", "bytes", "DMA and NoC engines: payload bytes delivered", &UnitCounters::bytes_moved},
      {"bursts", "bursts", "DMA and NoC engines: bursts issued", &UnitCounters::bursts},
      {"vector_elements", "elements", "vector unit: tile elements its instructions computed",
       &UnitCounters::vector_elements},
  };
  return counters;
}

}  // namespace tessera::sim
