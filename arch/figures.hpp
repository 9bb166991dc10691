// Figures derived from a run's counts that the cost model (estimated counts) and the report (simulated
// counts) both compute: stated once so that an estimate and a measurement are comparable.
#pragma once

#include <cstdint>

#include "arch/spec.hpp"

namespace tessera::arch {

// What a run's energy is charged for: its events and its time.
struct EnergyCounts {
  double macs = 0;
  double sram_bytes = 0;
  double dram_bytes = 0;
  double noc_byte_hops = 0;
  int64_t cycles = 0;  // the run's; every core of the machine is charged core_cycle for each
};

// Energy of a run in pJ: energy_pj's per-event costs (Horowitz ISSCC 2014 by default) and, for each core and
// each cycle, core_cycle.
inline double energy_pj(const ArchSpec& spec, const EnergyCounts& counts) {
  const EnergySpec& energy = spec.energy_pj;
  return counts.macs * energy.mac + counts.sram_bytes * energy.sram_byte +
         counts.dram_bytes * energy.dram_byte + counts.noc_byte_hops * energy.noc_byte_hop +
         static_cast<double>(counts.cycles) * spec.mesh.cores() * energy.core_cycle;
}

// The share of the machine's PE-cycles that did `macs` multiply-accumulates in `cycles` (0 for no cycles).
inline double pe_utilization(const ArchSpec& spec, int64_t macs, int64_t cycles) {
  const double pe_cycles =
      static_cast<double>(cycles) * spec.mesh.cores() * static_cast<double>(spec.core.pe_array.pes());
  return pe_cycles > 0 ? static_cast<double>(macs) / pe_cycles : 0;
}

}  // namespace tessera::arch
