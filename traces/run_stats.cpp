#include "traces/run_stats.hpp"

#include <fmt/format.h>

#include "traces/text_format.hpp"

namespace tessera::traces {

namespace {
std::string cycles_cell(double cycles) {
  return grouped(static_cast<int64_t>(cycles));
}
std::string two_decimals(double value) {
  return fmt::format("{:.2f}", value);
}
std::string one_decimal(double value) {
  return fmt::format("{:.1f}", value);
}
std::string percent(double share) {
  return fmt::format("{:.1f}%", 100 * share);
}
std::string megabytes_cell(double bytes) {
  return megabytes(static_cast<int64_t>(bytes));
}
}  // namespace

const std::vector<RunStat>& run_stats() {
  static const std::vector<RunStat> stats = {
      {"cycles", "cycles", "simulated, at the machine clock", &RunRecord::cycles, true, "cycles", 13,
       &cycles_cell},
      {"time_us", "us", "cycles at the machine clock", &RunRecord::time_us, true, "time_us", 10,
       &two_decimals},
      {"macs", "MACs", "the op's multiply-accumulates", &RunRecord::macs, true},
      {"pe_macs", "MACs", "performed by the PE arrays: more than macs when packed groups multiply zeros",
       &RunRecord::pe_macs},
      {"active_pes", "PEs", "the most PEs of one core's array a fold (RS: a round) used at once",
       &RunRecord::active_pes},
      {"pe_utilization", "", "macs over the machine's PE-cycles", &RunRecord::pe_utilization, true, "util", 6,
       &percent},
      {"dram_bytes", "bytes", "read and written", &RunRecord::dram_bytes, true, "DRAM_MB", 9,
       &megabytes_cell},
      {"dram_gbps", "GB/s", "DRAM bytes over the run's time", &RunRecord::dram_gbps, true, "GB/s", 7,
       &one_decimal},
      {"sram_read_bytes", "bytes", "read from SRAM banks, all cores", &RunRecord::sram_read_bytes, true},
      {"sram_write_bytes", "bytes", "written to SRAM banks, all cores", &RunRecord::sram_write_bytes, true},
      {"noc_bytes", "bytes", "payload that entered the mesh, once per destination", &RunRecord::noc_bytes,
       true},
      {"noc_byte_hops", "byte-hops", "bytes times the mesh links they crossed", &RunRecord::noc_byte_hops},
      {"energy_uj", "uJ",
       "MACs, SRAM, DRAM and NoC traffic and every core's cycles at the machine's energy_pj costs",
       &RunRecord::energy_uj, true, "energy_uj", 10, &two_decimals},
      {"analytical_cycles", "cycles", "the cost model's estimate", &RunRecord::analytical_cycles, true},
      {"analytical_bound", "", "the resource the cost model finds bounding", &RunRecord::analytical_bound},
      {"instructions", "instructions", "the tile program's", &RunRecord::instructions},
      {"sram_hazards", "instructions",
       "PE instructions whose operands were overwritten while being read (a race)", &RunRecord::sram_hazards},
      {"candidates_simulated", "mappings", "of the dataflow's, simulated to pick this one",
       &RunRecord::candidates_simulated},
      {"candidates_stopped", "mappings",
       "of those simulated, stopped once their cycles passed the fewest of an earlier candidate of the "
       "dataflow (the mapper's order): they could no longer win",
       &RunRecord::candidates_stopped},
      {"fusion", "",
       "an epilogue's: fused (on each output tile in SRAM) or unfused (a vector pass over the stored "
       "output); "
       "empty for an op without one",
       &RunRecord::fusion, true},
  };
  return stats;
}

}  // namespace tessera::traces
