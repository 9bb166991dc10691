// What the cost model and the lowering of a mapping must agree on, decided once and read by both: how each
// loop's tiles are dealt to the cores, which operands are multicast (read from DRAM once for every core that
// shares them), and which DMA engine loads each operand and which takes the stores.
#pragma once

#include <cstdint>

#include "arch/spec.hpp"
#include "mapper/mapping.hpp"
#include "mapper/tiling.hpp"

namespace tessera::mapper {

struct ContractionPlan {
  DimPartition parts[3];  // m, n, k
  Classes classes[3];     // the parts of each, by how many tiles they hold
  // A is shared by the cores of one (m, k) part that differ in n, W by those that differ in m. A shared
  // operand is multicast when the NoC can and every sharer's sequence of tiles is the same: all hold as many
  // tiles of the other dimension, or none of them reloads it.
  bool multicast[2] = {false, false};  // A, W
  int engines = 1;
  int load_engine[2] = {0, 0};  // A on one DMA engine, W on another when there are two

  // Stores go with the engine that loads fewer bytes (`a_bytes`, `w_bytes` as the caller counts them).
  int store_engine(int64_t a_bytes, int64_t w_bytes) const {
    return engines < 2 ? 0 : (a_bytes <= w_bytes ? load_engine[0] : load_engine[1]);
  }
};

ContractionPlan plan_contraction(const Mapping& mapping, const arch::ArchSpec& spec);

}  // namespace tessera::mapper
