#include "mapper/contraction/mapspace.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/timing/vector_timing.hpp"
#include "mapper/contraction/buffers.hpp"

namespace tessera::mapper {

namespace {

const std::array<std::array<Dim, 3>, 6>& all_orders() {
  static const std::array<std::array<Dim, 3>, 6> orders = {{{Dim::m, Dim::n, Dim::k},
                                                            {Dim::n, Dim::m, Dim::k},
                                                            {Dim::m, Dim::k, Dim::n},
                                                            {Dim::k, Dim::m, Dim::n},
                                                            {Dim::n, Dim::k, Dim::m},
                                                            {Dim::k, Dim::n, Dim::m}}};
  return orders;
}

std::string kib(int64_t bytes) {
  return bytes % 1024 == 0 ? fmt::format("{} KiB", bytes / 1024) : fmt::format("{:.1f} KiB", bytes / 1024.0);
}

// The tile sizes of one dimension (tile_ladder). RS also tries a half and a quarter of its output-row and
// filter granules: a smaller tile that keeps all its channels' partial sums in SRAM can beat one that fills
// the array but spills them. Its filters (`even_splits`) also take the even splits of a core's share into
// 2^a and 3 * 2^a tiles: 64 of 192 filters keep four images' partial sums in a buffer where 72 do not fit,
// run as 4 groups of 16 filters a PE and leave no ragged last tile (Eyeriss's CONV3-5).
std::vector<int64_t> dataflow_tile_ladder(arch::Dataflow dataflow, int64_t extent, int parts, int64_t granule,
                                          bool even_splits) {
  std::vector<int64_t> tiles = tile_ladder(extent, parts, granule);
  if (dataflow == arch::Dataflow::rs) {
    const int64_t per_part = tiles.back();
    for (int64_t fraction : {granule / 4, granule / 2})
      if (fraction >= 1 && fraction < tiles.front()) tiles.push_back(fraction);
    const int64_t smallest = std::max<int64_t>(1, granule / 4);
    auto even_split = [&](int64_t count) { return (per_part + count - 1) / count; };
    for (int64_t count = 2; even_splits && count <= per_part && even_split(count) >= smallest;
         count += count % 3 == 0 ? count / 3 : count / 2)
      tiles.push_back(even_split(count));
    std::sort(tiles.begin(), tiles.end());
    tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  }
  return tiles;
}

// Gives `mapping` the deepest buffering that fits the core's SRAM: both doubled, else inputs doubled, else
// the output doubled (a finished tile drains while the next computes), else none. False if none fits.
bool choose_buffering(Mapping& mapping, const arch::ArchSpec& spec) {
  for (const auto& [inputs, output] : {std::pair{true, true}, {true, false}, {false, true}, {false, false}}) {
    mapping.double_buffer_inputs = inputs;
    mapping.double_buffer_output = output;
    if (plan_buffers(mapping, spec).total_bytes <= spec.core.sram.bytes) return true;
  }
  return false;
}

}  // namespace

std::vector<Split> splits_of(int cores) {
  std::vector<Split> splits;
  for (int used = cores; used >= 1; --used) {
    if (cores % used != 0) continue;
    for (int m = 1; m <= used; ++m) {
      if (used % m != 0) continue;
      for (int n = 1; n <= used / m; ++n) {
        if ((used / m) % n != 0) continue;
        splits.push_back(Split{m, n, used / m / n});
      }
    }
  }
  return splits;
}

std::vector<int64_t> tile_ladder(int64_t extent, int parts, int64_t granule) {
  const int64_t per_part = (extent + parts - 1) / parts;
  std::vector<int64_t> tiles;
  for (int64_t tile = granule; tile < per_part; tile *= 2) tiles.push_back(tile);
  tiles.push_back(per_part);
  return tiles;
}

int64_t enumerate_mappings(const std::shared_ptr<const ContractionStage>& stage, const arch::ArchSpec& spec,
                           arch::Dataflow dataflow,
                           const std::function<bool(size_t split_index)>& split_filter,
                           const std::function<void(const Mapping&, size_t split_index)>& visit,
                           const EpilogueSearch& epilogue) {
  const std::shared_ptr<const EpilogueWork> fused_epilogue =
      epilogue.work && epilogue.fusion == Fusion::fused ? epilogue.work : nullptr;
  // The output path runs on a tile the array finished on this core: no k split, no tile met again.
  const bool in_array = epilogue.work && epilogue.fusion == Fusion::array;
  const ContractionShape& problem = stage->shape();
  const arch::PeArraySpec& pe = spec.core.pe_array;
  if (!pe.supports(dataflow) || !pe.supports(problem.dtype)) return 0;
  if (pe_register_bytes_needed(dataflow, problem.dtype, pe.overlap_folds) > spec.core.pe_register_bytes)
    return 0;
  if (!stage->obstacle(dataflow, spec).message.empty()) return 0;
  const Granules granules = stage->granules(dataflow, spec);
  const std::vector<Split> splits = splits_of(spec.mesh.cores());
  int64_t legal = 0;
  for (size_t s = 0; s < splits.size(); ++s) {
    if (!split_filter(s)) continue;
    const Split& split = splits[s];
    if (split.m > problem.m || split.n > problem.n || split.k > problem.k) continue;
    if (stage->whole_m() && split.m > 1) continue;  // tiles of whole images: m on one core
    if (in_array && split.k > 1) continue;
    Mapping mapping;
    mapping.form = stage;
    mapping.dataflow = dataflow;
    mapping.split_m = split.m;
    mapping.split_n = split.n;
    mapping.split_k = split.k;
    if (epilogue.work) {
      mapping.epilogue = epilogue.work;
      mapping.fusion = epilogue.fusion;
      if (epilogue.fusion == Fusion::unfused) mapping.epilogue_pass = epilogue.pass;
    }
    for (int64_t tile_m : dataflow_tile_ladder(dataflow, problem.m, split.m, granules.m, false)) {
      if (DimPartition(problem.m, tile_m, split.m).tiles() < split.m) continue;
      if (stage->whole_m() && tile_m < problem.m) continue;
      for (int64_t tile_n : dataflow_tile_ladder(dataflow, problem.n, split.n, granules.n, true)) {
        if (DimPartition(problem.n, tile_n, split.n).tiles() < split.n) continue;
        for (int64_t tile_k : tile_ladder(problem.k, split.k, granules.k)) {
          if (DimPartition(problem.k, tile_k, split.k).tiles() < split.k) continue;
          mapping.tile_m = tile_m;
          mapping.tile_n = tile_n;
          mapping.tile_k = tile_k;
          if (!choose_buffering(mapping, spec)) continue;
          if (fused_epilogue &&
              !arch::vector_work_problem(*spec.core.vector,
                                         fused_epilogue
                                             ->tile_op(std::min(tile_m, problem.m) * stage->pixels_per_m(),
                                                       std::min(tile_n, problem.n))
                                             .work())
                   .empty())
            continue;
          const std::array<int64_t, 3> trips = {DimPartition(problem.m, tile_m, split.m).max_tile_count(),
                                                DimPartition(problem.n, tile_n, split.n).max_tile_count(),
                                                DimPartition(problem.k, tile_k, split.k).max_tile_count()};
          for (const auto& order : all_orders()) {
            // A k split reduces finished output tiles over the NoC: k must be the innermost loop.
            if (split.k > 1 && order[2] != Dim::k) continue;
            // A fused epilogue runs on finished output tiles: none may be left and met again.
            if ((fused_epilogue || in_array) && reload_factor(trips, order, true, true, false) > 1) continue;
            mapping.order = order;
            ++legal;
            visit(mapping, s);
          }
        }
      }
    }
  }
  return legal;
}

Infeasibility why_infeasible(const std::shared_ptr<const ContractionStage>& stage, const arch::ArchSpec& spec,
                             arch::Dataflow dataflow) {
  const ContractionShape& problem = stage->shape();
  const arch::PeArraySpec& pe = spec.core.pe_array;
  if (!pe.supports(dataflow))
    return {"core.pe_array.dataflows",
            fmt::format("the PE array does not support dataflow {}", arch::name_of(dataflow))};
  if (!pe.supports(problem.dtype))
    return {"core.pe_array.dtypes",
            fmt::format("the PE array does not compute in {}", name_of(problem.dtype))};
  if (Infeasibility obstacle = stage->obstacle(dataflow, spec); !obstacle.message.empty()) return obstacle;
  const int64_t registers = pe_register_bytes_needed(dataflow, problem.dtype, pe.overlap_folds);
  if (registers > spec.core.pe_register_bytes) {
    return {"core.pe_register_bytes",
            fmt::format("{} in {} needs {} B of registers per PE, the PE has {} B", arch::name_of(dataflow),
                        name_of(problem.dtype), registers, spec.core.pe_register_bytes)};
  }
  // The smallest tile anywhere in the mapspace, single-buffered: one granule, or less when a dimension is
  // dealt to every core. Buffers only grow with the tile, so if this does not fit, nothing does.
  const Granules granules = stage->granules(dataflow, spec);
  const int64_t cores = spec.mesh.cores();
  auto smallest_tile = [&](int64_t extent, int64_t granule) {
    return std::min({extent, granule, (extent + cores - 1) / cores});
  };
  Mapping smallest;
  smallest.form = stage;
  smallest.dataflow = dataflow;
  smallest.tile_m = stage->whole_m() ? problem.m : smallest_tile(problem.m, granules.m);
  smallest.tile_n = smallest_tile(problem.n, granules.n);
  smallest.tile_k = smallest_tile(problem.k, granules.k);
  smallest.double_buffer_inputs = false;
  smallest.double_buffer_output = false;
  const int64_t needed = plan_buffers(smallest, spec).total_bytes;
  if (needed > spec.core.sram.bytes) {
    return {"core.sram.kib",
            fmt::format(
                "the smallest tile (m={} n={} k={}, single-buffered) needs {} of SRAM, the core has {}",
                smallest.tile_m, smallest.tile_n, smallest.tile_k, kib(needed), kib(spec.core.sram.bytes))};
  }
  return {};
}

}  // namespace tessera::mapper
