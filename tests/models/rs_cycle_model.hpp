// A per-cycle reference model of the row-stationary (RS, Eyeriss) PE array of docs/pe-array-timing.md
// ("Convolution instructions" and "RS: row stationary"), written from the document's rules and independent of
// the closed form in arch/conv_timing.cpp, which tests/arch/rs_timing_test.cpp checks against it.
//
// The model derives the folding from the document (set rows h, row chunks, strips, bands, qc, pf, the unit
// order, rounds of `bands` consecutive units, each unit in its band's rows and its strip's first columns) and
// then steps the array cycle by cycle:
// - one filter bus per array row delivers one weight per cycle to the filter scratchpad (with overlap_folds
//   its shadow copy) of every PE of that row that holds a unit of the round being loaded;
// - every PE's MAC unit does one MAC per cycle, output column outermost, then filter, channel, tap, with the
//   weight from its filter scratchpad, the input value from its input scratchpad and the sum in its
//   partial-sum scratchpad. Input words come over the diagonal buses (one bus per input row of a set) in the
//   cycle of their first use and stay while the next output column still needs them; the document gives the
//   buses no latency and its compute phase (q*s*pf*qc cycles) no input stall, so the model delivers just in
//   time (a write-through into the scratchpad) and checks that each bus carries one word per cycle;
// - the vertical psum chain: when a PE finishes an output column its pf sums leave the partial-sum
//   scratchpad (the document sizes P for the column being accumulated; a finished column waits beside it, in
//   storage the document does not name, until the sums from below arrive: max_waiting_columns). The set's
//   bottom row sends them up the next cycle, every row adds its own (matched by output column) and forwards
//   them one row per cycle, and the set's top row writes them into the output tile through its output port,
//   one sum per cycle. Output columns before the last do the same while the next column computes. Each link
//   carries one column's sums per cycle (the earliest round's first) and each port one sum per cycle; where
//   two need one in the same cycle, one waits (counted in psum_path_waits), so a conflict the document's
//   formulas do not foresee shows as a later completion;
// - a controller starts a round's load when its instruction is ready, every filter bus is idle and the filter
//   scratchpads are free (full overlap: no PE's shadow holds weights its round has not switched to yet;
//   drain: every earlier round has started its MACs and no PE has MACs left; none: every earlier round has
//   completed), and a round's compute when every filter word of the round
//   has been delivered and no PE has MACs of an earlier round left. Both read the model's state, never a
//   timing formula.
// A broken invariant (a PE given two units of one round, a scratchpad over its capacity, a shadow scratchpad
// overwritten before its round switched to it, a MAC on a weight of another round or the wrong tap, a
// diagonal bus asked for two words in a cycle, sums from below without the same output column's sums above,
// sums reaching a port without all the set's rows) throws std::logic_error naming it. Simple rather than
// fast: arrays up to ~12x14, shapes up to e, q ~30, c, m ~40, r, s up to 11.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/spec.hpp"

namespace tessera::testmodels {

struct RsModelArray {
  int rows = 1;  // R
  int cols = 1;  // C
  arch::FoldOverlap overlap_folds = arch::FoldOverlap::none;
  int64_t filter_words = 0;  // F: operand words per PE filter scratchpad
  int64_t ifmap_words = 0;   // I: operand words per PE input scratchpad
  int64_t psum_words = 0;    // P: accumulator words per PE partial-sum scratchpad
};

// One conv instruction: O[y][x][f] = sum over (fr, fs, ch) of
// I[y*stride + fr*dilation - pad_top][x*stride + fs*dilation - pad_left][ch] * W[(fr*s + fs)*c + ch][f],
// I zero outside the ih x iw tile; its operands are in SRAM from ready_cycle on.
struct RsModelInstruction {
  int64_t e = 0, q = 0, m = 0, c = 0, r = 1, s = 1;
  int64_t stride = 1, dilation = 1, pad_top = 0, pad_left = 0;
  int64_t ih = 0, iw = 0;
  int64_t ready_cycle = 0;
  std::vector<int64_t> input;    // ih x iw x c, (row, column, channel) order
  std::vector<int64_t> filters;  // (r*s*c) x m, rows in (filter row, filter column, channel) order
};

// The folding the model derived for one instruction, in the document's terms.
struct RsModelFolding {
  int64_t set_rows = 0;  // h
  int64_t row_chunks = 0;
  int64_t strip_cols = 0;
  int64_t strips = 0;
  int64_t bands = 0;
  int64_t channels_per_pe = 0;  // qc
  int64_t filters_per_pe = 0;   // pf
  int64_t filter_groups = 0;
  int64_t channel_groups = 0;
  int64_t units = 0;
  int64_t rounds = 0;
};

// One round as the model ran it, in the array's order.
struct RsModelRound {
  int instruction = 0;
  int64_t units = 0;
  int64_t pes = 0;            // PEs holding a unit of the round
  int64_t load_start = 0;     // the first filter word of the round is on the buses
  int64_t loaded = 0;         // the cycle after the round's last filter word landed
  int64_t compute_start = 0;  // the round's first MACs
  int64_t computed = 0;       // the cycle after the round's last MAC
  int64_t complete = 0;       // the cycle after the round's last sum was written into the output tile
};

struct RsModelRun {
  std::vector<RsModelFolding> foldings;  // per instruction
  std::vector<RsModelRound> rounds;
  std::vector<std::vector<int64_t>>
      outputs;                  // per instruction e x q x m, (row, column, filter) order, from 0
  int64_t macs = 0;             // MACs performed, padding zeros included
  int64_t psum_path_waits = 0;  // how often some column's sums found their link or output port busy
  // The most finished output columns one PE held at once while waiting for the sums from below, besides the
  // column its partial-sum scratchpad accumulates (the document sizes P for that column only).
  int64_t max_waiting_columns = 0;
};

// Runs the instructions in order on the array until every round has completed. Throws std::invalid_argument
// for malformed input (or a shape RS cannot hold: I < s, F < s, P < 1) and std::logic_error for a broken
// invariant.
RsModelRun run_rs_cycle_model(const RsModelArray& array, const std::vector<RsModelInstruction>& instructions);

}  // namespace tessera::testmodels
