#include "mapper/kit/unit_cycles.hpp"

#include <algorithm>
#include <cmath>

#include "arch/figures.hpp"
#include "arch/noc.hpp"
#include "arch/timing/vector_timing.hpp"

namespace tessera::mapper {

int64_t transfer_cycles(const arch::DmaSpec& dma, int64_t bytes, int64_t descriptors) {
  return descriptors * int64_t{dma.setup_cycles} +
         static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / dma.bytes_per_cycle));
}

int64_t vector_cycles(const arch::VectorSpec& vector, arch::VectorKind kind, int64_t rows, int64_t cols,
                      int64_t extra_simple_ops) {
  arch::VectorWork work;
  work.kind = kind;
  work.rows = rows;
  work.cols = cols;
  if (kind == arch::VectorKind::map) {
    work.map_simple_ops = extra_simple_ops;
  } else {
    work.softmax_extra_simple_ops = extra_simple_ops;
  }
  return arch::vector_timing(vector, work).cycles;
}

int cores_with_work(const std::vector<int64_t>& per_core) {
  const auto working =
      std::count_if(per_core.begin(), per_core.end(), [](int64_t cycles) { return cycles > 0; });
  return std::max(1, static_cast<int>(working));
}

void finish_estimate(Cost& cost, const EstimateTotals& totals, const arch::ArchSpec& spec) {
  const double dram_bytes = static_cast<double>(cost.dram_bytes);
  cost.dram_cycles = static_cast<int64_t>(std::ceil(dram_bytes / spec.dram.bytes_per_cycle));
  const double hottest_link_bytes =
      dram_bytes / totals.cores_used * arch::dram_hottest_link_share(spec, totals.cores_used);
  cost.noc_cycles = std::max(
      cost.noc_cycles, static_cast<int64_t>(std::ceil(hottest_link_bytes / spec.noc.link_bytes_per_cycle)));
  cost.overhead_cycles = int64_t{spec.dram.latency_cycles} * totals.round_trips;
  cost.cycles =
      std::max({totals.busiest_core_cycles, cost.dram_cycles, cost.noc_cycles}) + cost.overhead_cycles;
  const double macs = totals.macs;
  const int64_t most =
      std::max({cost.compute_cycles, cost.vector_cycles, cost.dma_cycles, cost.dram_cycles, cost.noc_cycles});
  cost.bound = most == cost.compute_cycles  ? Bound::compute
               : most == cost.vector_cycles ? Bound::vector
               : most == cost.dram_cycles   ? Bound::dram
               : most == cost.dma_cycles    ? Bound::dma
                                            : Bound::noc;
  cost.pe_utilization = macs / (static_cast<double>(cost.cycles) * spec.core.pe_array.rows *
                                spec.core.pe_array.cols * spec.mesh.rows * spec.mesh.cols);
  arch::EnergyCounts counts;
  counts.macs = macs;
  counts.dram_bytes = static_cast<double>(cost.dram_bytes);
  counts.cycles = cost.cycles;
  cost.energy_pj = arch::energy_pj(spec, counts);
}

}  // namespace tessera::mapper
