// Figures derived from a run's counts that the cost model (estimated counts) and the report (simulated
// counts) both compute: stated once so that an estimate and a measurement are comparable.
#pragma once

#include <cstdint>

#include "arch/spec.hpp"

namespace tessera::arch {

// Energy of a run (energy_pj's per-event costs, Horowitz ISSCC 2014 by default), in pJ.
inline double energy_pj(const EnergySpec& energy, double macs, double sram_bytes, double dram_bytes,
                        double noc_byte_hops) {
  return macs * energy.mac + sram_bytes * energy.sram_byte + dram_bytes * energy.dram_byte +
         noc_byte_hops * energy.noc_byte_hop;
}

// The share of the machine's PE-cycles that did `macs` multiply-accumulates in `cycles` (0 for no cycles).
inline double pe_utilization(const ArchSpec& spec, int64_t macs, int64_t cycles) {
  const double pe_cycles =
      static_cast<double>(cycles) * spec.mesh.cores() * static_cast<double>(spec.core.pe_array.pes());
  return pe_cycles > 0 ? static_cast<double>(macs) / pe_cycles : 0;
}

}  // namespace tessera::arch
