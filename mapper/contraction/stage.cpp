#include "mapper/contraction/stage.hpp"

#include <algorithm>

#include "common/integer_math.hpp"

namespace tessera::mapper {

namespace {
// Elements of `extent` once each tile of `tile` is rounded up to whole array `block`s (ragged folds).
int64_t padded_extent(int64_t extent, int64_t tile, int64_t block) {
  const int64_t full = extent / tile;
  const int64_t rest = extent % tile;
  return full * ceil_div(tile, block) * block + ceil_div(rest, block) * block;
}
}  // namespace

Granules matmul_granules(arch::Dataflow dataflow, const arch::PeArraySpec& pe) {
  const int64_t stream = std::min(pe.rows, pe.cols);
  switch (dataflow) {
    case arch::Dataflow::ws:
      return {stream, pe.cols, pe.rows};
    case arch::Dataflow::is:
      return {pe.cols, stream, pe.rows};
    case arch::Dataflow::os:
      return {pe.rows, pe.cols, stream};
    case arch::Dataflow::rs:
      break;
  }
  return {stream, stream, stream};
}

InstructionProfile ContractionStage::profile(const InstructionTimer& timer, arch::Dataflow dataflow,
                                             int64_t tm, int64_t tn, int64_t tk) const {
  // The matmul the array runs: m counts pixels, k taps x channels.
  return timer.matmul(dataflow, tm * pixels_per_m(), tn, tk * taps_per_k());
}

double ContractionStage::edge_waste(const InstructionTimer& timer, const Mapping& mapping) const {
  const int64_t rows = timer.rows(), cols = timer.cols();
  // The matmul the array runs: m counts pixels, k taps x channels.
  const ContractionShape& problem = shape();
  // Per instruction: a tile of several parts (images) runs one instruction on each part's pixels.
  const int64_t pixels = pixels_per_m() / pe_parts(), taps = taps_per_k();
  const int64_t m = problem.m * pixels, n = problem.n, k = problem.k * taps;
  const int64_t tile_m = mapping.tile_m * pixels, tile_n = mapping.tile_n, tile_k = mapping.tile_k * taps;
  int64_t padded_m = m, padded_n = n, padded_k = k;
  switch (mapping.dataflow) {
    case arch::Dataflow::ws:
      padded_k = padded_extent(k, tile_k, rows), padded_n = padded_extent(n, tile_n, cols);
      break;
    case arch::Dataflow::is:
      padded_k = padded_extent(k, tile_k, rows), padded_m = padded_extent(m, tile_m, cols);
      break;
    case arch::Dataflow::os:
      padded_m = padded_extent(m, tile_m, rows), padded_n = padded_extent(n, tile_n, cols);
      break;
    case arch::Dataflow::rs:
      break;
  }
  return 1.0 -
         static_cast<double>(m * n * k) /
             (static_cast<double>(padded_m) * static_cast<double>(padded_n) * static_cast<double>(padded_k));
}

}  // namespace tessera::mapper
