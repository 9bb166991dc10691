#include "arch/timing/rs_timing.hpp"

#include <fmt/format.h>

#include "common/integer_math.hpp"

namespace tessera::arch {

namespace {
struct SpadWords {
  int64_t filter = 0, ifmap = 0, psum = 0;
};
SpadWords words_of(const PeSpadSpec& spad, DType dtype) {
  return {spad.filter_bytes / size_bytes(dtype), spad.ifmap_bytes / size_bytes(dtype),
          spad.psum_bytes / size_bytes(accumulator_of(dtype))};
}
}  // namespace

std::string rs_infeasibility(const ArchSpec& spec, DType dtype, int64_t filter_cols) {
  const SpadWords words = words_of(spec.core.pe_spad, dtype);
  if (words.ifmap < filter_cols || words.filter < filter_cols || words.psum < 1) {
    return fmt::format(
        "row stationary keeps a filter row ({} weights) and an input window ({} values) of {} per PE, and a "
        "partial sum in {}: the PE scratchpads hold {} filter, {} input and {} partial-sum words",
        filter_cols, filter_cols, name_of(dtype), name_of(accumulator_of(dtype)), words.filter, words.ifmap,
        words.psum);
  }
  return "";
}

RsTiming::RsTiming(const ArchSpec& spec)
    : rows_(spec.core.pe_array.rows),
      cols_(spec.core.pe_array.cols),
      overlap_(spec.core.pe_array.overlap_folds),
      spad_(spec.core.pe_spad) {}

RsPlan RsTiming::plan(const ConvTileShape& shape, DType dtype) const {
  const SpadWords words = words_of(spad_, dtype);
  RsPlan p;
  p.set_rows = std::min(shape.r, rows_);
  p.row_chunks = ceil_div(shape.r, p.set_rows);
  p.strips = ceil_div(shape.e, cols_);
  p.strip_cols = std::min(shape.e, cols_);
  p.bands = rows_ / p.set_rows;
  // A PE's channels must fit its input scratchpad (a window each) and, with one filter, its filter
  // scratchpad.
  // Then the groups are evened out: as many groups as the most a PE holds needs, each as full as the next
  // (64 filters with room for 18 run as 4 x 16, not 18, 18, 18, 10: a round takes its largest unit's time).
  const int64_t most_channels =
      std::clamp<int64_t>(std::min(words.ifmap, words.filter) / shape.s, 1, shape.c);
  p.channel_groups = ceil_div(shape.c, most_channels);
  p.channels_per_pe = ceil_div(shape.c, p.channel_groups);
  const int64_t most_filters =
      std::clamp<int64_t>(std::min(words.psum, words.filter / (p.channels_per_pe * shape.s)), 1, shape.m);
  p.filter_groups = ceil_div(shape.m, most_filters);
  p.filters_per_pe = ceil_div(shape.m, p.filter_groups);
  p.units = p.row_chunks * p.filter_groups * p.channel_groups * p.strips;
  p.rounds = ceil_div(p.units, p.bands);
  return p;
}

int64_t RsTiming::active_pes(const ConvTileShape& shape, DType dtype) const {
  int64_t most = 0;
  for_each_round(shape, dtype, [&](const RsRound& round) { most = std::max(most, round.pes); });
  return most;
}

RsRoundTiming RsTiming::schedule(const RsRound& round, int64_t ready, RsPipeline& state) const {
  // The filter buses fill every PE's scratchpad (its shadow copy with full overlap) while the previous
  // round computes (full) or drains (drain); the MACs start when the weights are in and the previous round
  // has drained (the partial-sum chain and the output tile's port carry one round at a time); the partial
  // sums then ripple up the set and leave.
  RsRoundTiming t;
  t.load_start = std::max({ready, state.bus_free, state.spad_free});
  t.compute_start = std::max(t.load_start + round.load, state.drained);
  t.complete = t.compute_start + round.compute + round.drain;
  state.bus_free = t.load_start + round.load;
  state.drained = t.complete;
  // With a shadow scratchpad (full) the next fill may start once this round has switched to its weights;
  // with one scratchpad, once its MACs are done (drain: under this round's drain) or when it is done (none).
  state.spad_free = overlap_ == FoldOverlap::full    ? t.compute_start
                    : overlap_ == FoldOverlap::drain ? t.compute_start + round.compute
                                                     : t.complete;
  return t;
}

}  // namespace tessera::arch
