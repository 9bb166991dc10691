#include "mapper/contraction/plan.hpp"

#include <algorithm>

#include "mapper/contraction/stage.hpp"

namespace tessera::mapper {

ContractionPlan plan_contraction(const Mapping& mapping, const arch::ArchSpec& spec) {
  const ContractionShape& shape = stage_of(mapping).shape();
  ContractionPlan plan;
  plan.parts[0] = DimPartition(shape.m, mapping.tile_m, mapping.split_m);
  plan.parts[1] = DimPartition(shape.n, mapping.tile_n, mapping.split_n);
  plan.parts[2] = DimPartition(shape.k, mapping.tile_k, mapping.split_k);
  for (int d = 0; d < 3; ++d) plan.classes[d] = classes_of(plan.parts[d]);
  const Classes &cm = plan.classes[0], &cn = plan.classes[1], &ck = plan.classes[2];
  auto reload = [&](int64_t tm, int64_t tn, int64_t tk, bool dm, bool dn, bool dk) {
    return reload_factor({tm, tn, tk}, mapping.order, dm, dn, dk);
  };
  bool a_reloaded = false, w_reloaded = false;
  for (int i = 0; i < cm.size; ++i)
    for (int j = 0; j < cn.size; ++j)
      for (int l = 0; l < ck.size; ++l) {
        const int64_t counts_m = cm.entries[i].count, counts_n = cn.entries[j].count,
                      counts_k = ck.entries[l].count;
        a_reloaded = a_reloaded || reload(counts_m, counts_n, counts_k, true, false, true) > 1;
        w_reloaded = w_reloaded || reload(counts_m, counts_n, counts_k, false, true, true) > 1;
      }
  const bool multicast = spec.noc.multicast;
  plan.multicast[kA] = multicast && mapping.split_n > 1 && (cn.size == 1 || !a_reloaded);
  plan.multicast[kW] = multicast && mapping.split_m > 1 && (cm.size == 1 || !w_reloaded);
  // The busiest core's elements of A and W loaded, for the load engines' split.
  const int64_t tiles_m = plan.parts[0].max_tile_count(), tiles_n = plan.parts[1].max_tile_count(),
                tiles_k = plan.parts[2].max_tile_count();
  const int64_t tm = std::min(mapping.tile_m, shape.m), tn = std::min(mapping.tile_n, shape.n),
                tk = std::min(mapping.tile_k, shape.k);
  const double a = static_cast<double>(tiles_m * tiles_k * tm * tk *
                                       reload(tiles_m, tiles_n, tiles_k, true, false, true)),
               w = static_cast<double>(tiles_k * tiles_n * tk * tn *
                                       reload(tiles_m, tiles_n, tiles_k, false, true, true));
  plan.engines = transfer_engines(spec.core.dma, a, w);
  return plan;
}

}  // namespace tessera::mapper
