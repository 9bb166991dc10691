// What the cost model and the lowering of a mapping must agree on, decided once and read by both: how each
// loop's tiles are dealt to the cores, which operands are multicast (read from DRAM once for every core that
// shares them), and which DMA engines load each operand and which take the stores.
#pragma once

#include <cstdint>

#include "arch/spec.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/tiling.hpp"
#include "mapper/mapping.hpp"

namespace tessera::mapper {

struct ContractionPlan {
  DimPartition parts[3];  // m, n, k
  Classes classes[3];     // the parts of each, by how many tiles they hold
  // A is shared by the cores of one (m, k) part that differ in n, W by those that differ in m. A shared
  // operand is multicast when the NoC can and every sharer's sequence of tiles is the same: all hold as many
  // tiles of the other dimension, or none of them reloads it.
  bool multicast[2] = {false, false};  // A, W
  // DMA engines (mapper/kit/dma_engines.hpp): A's loads on one group, W's on another, sized by the elements
  // each loads on the busiest core; the stores with two engines or fewer on the group that loads fewer
  // bytes (`a_bytes`, `w_bytes` as the caller counts them), else on all engines; every transfer cut into
  // row blocks over its group.
  TransferEngines engines;
  const EngineGroup& load_group(int tensor) const { return engines.loads[tensor]; }
  const EngineGroup& store_group(int64_t a_bytes, int64_t w_bytes) const {
    return engines.store_group(static_cast<double>(a_bytes), static_cast<double>(w_bytes));
  }
};

ContractionPlan plan_contraction(const Mapping& mapping, const arch::ArchSpec& spec);

}  // namespace tessera::mapper
