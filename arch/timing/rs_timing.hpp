// Closed-form timing of a row-stationary convolution instruction (docs/pe-array-timing.md, "RS"): Eyeriss's
// mapping, PE sets of filter rows x output rows folded onto the physical array, each PE running 1-D row
// convolutions from its scratchpads, round by round. The simulator and the cost model both use it; the
// per-cycle model in tests/models/rs_cycle_model checks it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "arch/spec.hpp"
#include "arch/timing/conv_timing.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {
// What RS can keep in one PE's scratchpads, in elements ("" when the dtype and filter width fit, else why
// not).
std::string rs_infeasibility(const ArchSpec& spec, DType dtype, int64_t filter_cols);

// How RS lays an instruction out on the array.
struct RsPlan {
  int64_t set_rows = 0;         // h: filter rows a PE set spans (one PE row each)
  int64_t row_chunks = 0;       // filters taller than the array are split into chunks of h rows
  int64_t strip_cols = 0;       // output rows per strip (array columns a set uses)
  int64_t strips = 0;           // the e output rows folded into strips of at most `cols`
  int64_t bands = 0;            // sets stacked along the array's rows: floor(rows / h)
  int64_t channels_per_pe = 0;  // channels a PE interleaves (its ifmap scratchpad holds that many windows)
  int64_t filters_per_pe = 0;   // filters a PE interleaves (psum scratchpad; filter scratchpad p*q*s)
  int64_t filter_groups = 0, channel_groups = 0;
  int64_t units = 0;   // row chunks x filter groups x channel groups x strips
  int64_t rounds = 0;  // ceil(units / bands): units run `bands` at a time
};

// One round of units on the array.
struct RsRound {
  int64_t load = 0;     // filter scratchpad fill: p*q*s words over each PE row's multicast bus
  int64_t compute = 0;  // q output columns x s taps x p filters x channels, one MAC per cycle per PE
  // From the end of `compute` to the round's last sum written: its units' partial sums ripple up their h
  // rows and p per output column leave, the latest-finishing unit deciding.
  int64_t drain = 0;
  int64_t pes = 0;  // PEs the round's units occupy
};

struct RsPipeline {
  int64_t bus_free = 0;   // the filter buses can load the next round's weights
  int64_t drained = 0;    // the previous round's last sum is written
  int64_t spad_free = 0;  // the filter scratchpad (full: its shadow copy) may be refilled
};

struct RsRoundTiming {
  int64_t load_start = 0, compute_start = 0, complete = 0;
};

class RsTiming {
 public:
  explicit RsTiming(const ArchSpec& spec);

  RsPlan plan(const ConvTileShape& shape, DType dtype) const;
  int64_t active_pes(const ConvTileShape& shape, DType dtype) const;  // the most PEs any round uses
  // Calls visit(const RsRound&) for each round of the instruction, in order.
  template <class Visit>
  void for_each_round(const ConvTileShape& shape, DType dtype, Visit&& visit) const;
  // Schedules one round that may not start before `ready`; advances `state`.
  RsRoundTiming schedule(const RsRound& round, int64_t ready, RsPipeline& state) const;

 private:
  int64_t rows_, cols_;
  FoldOverlap overlap_;
  PeSpadSpec spad_;
};

template <class Visit>
void RsTiming::for_each_round(const ConvTileShape& shape, DType dtype, Visit&& visit) const {
  const RsPlan p = plan(shape, dtype);
  auto size_of = [](int64_t extent, int64_t block, int64_t index) {
    return extent - index * block < block ? extent - index * block : block;
  };
  // Units in order (row chunk, filter group, channel group, strip), strips innermost: a round's bands take
  // consecutive units, so the strips of one set sit side by side when they fit.
  RsRound round;
  int64_t finish = 0;  // the round's latest unit compute + drain
  int64_t in_round = 0;
  for (int64_t chunk = 0; chunk < p.row_chunks; ++chunk) {
    const int64_t h = size_of(shape.r, p.set_rows, chunk);
    for (int64_t fg = 0; fg < p.filter_groups; ++fg) {
      const int64_t filters = size_of(shape.m, p.filters_per_pe, fg);
      for (int64_t cg = 0; cg < p.channel_groups; ++cg) {
        const int64_t channels = size_of(shape.c, p.channels_per_pe, cg);
        for (int64_t strip = 0; strip < p.strips; ++strip) {
          const int64_t width = size_of(shape.e, p.strip_cols, strip);
          const int64_t compute = shape.q * shape.s * filters * channels;
          round.load = std::max(round.load, filters * channels * shape.s);
          round.compute = std::max(round.compute, compute);
          finish = std::max(finish, compute + h - 1 + filters);
          round.pes += h * width;
          if (++in_round == p.bands) {
            round.drain = finish - round.compute;
            visit(static_cast<const RsRound&>(round));
            round = RsRound{};
            finish = 0;
            in_round = 0;
          }
        }
      }
    }
  }
  if (in_round > 0) {
    round.drain = finish - round.compute;
    visit(static_cast<const RsRound&>(round));
  }
}

}  // namespace tessera::arch
