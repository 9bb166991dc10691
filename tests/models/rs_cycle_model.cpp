#include "models/rs_cycle_model.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/integer_math.hpp"

namespace tessera::testmodels {
namespace {

// An invariant of docs/pe-array-timing.md ("RS"); a violation means the schedule let two things meet that
// the document says never meet.
void require(bool holds, const char* invariant, int64_t cycle, int64_t row, int64_t col) {
  if (!holds) {
    throw std::logic_error("RS cycle model: invariant '" + std::string(invariant) + "' broken at cycle " +
                           std::to_string(cycle) + ", PE(" + std::to_string(row) + "," + std::to_string(col) +
                           ")");
  }
}

// The extent of block `index` when `extent` is cut into blocks of `block` (the last one shorter).
int64_t block_size(int64_t extent, int64_t block, int64_t index) {
  return std::min(block, extent - index * block);
}

// One unit: a (row chunk, filter group, channel group, strip) of one instruction, placed in its band's rows
// and its strip's first columns.
struct UnitPlan {
  int instruction = 0;
  int round = 0;
  int64_t first_row = 0;  // the array row of the set's row 0: band * h
  int64_t rows = 0;       // h_u
  int64_t width = 0;      // the unit occupies array columns 0 .. width-1
  int64_t filter_row0 = 0;
  int64_t filter0 = 0, filters = 0;    // pf_u filters from filter0
  int64_t channel0 = 0, channels = 0;  // qc_u channels from channel0
  int64_t output_row0 = 0;             // the strip's first output row
};

struct RoundPlan {
  int instruction = 0;
  int64_t ready_cycle = 0;
  std::vector<int> units;
  int64_t bus_words = 0;     // words the filter buses deliver, over all array rows
  int64_t output_words = 0;  // sums the round writes into the output tile
};

// The document's folding, its formulas read as written.
RsModelFolding fold(const RsModelArray& array, const RsModelInstruction& in) {
  RsModelFolding f;
  f.set_rows = std::min<int64_t>(in.r, array.rows);
  f.row_chunks = ceil_div(in.r, f.set_rows);
  f.strip_cols = std::min<int64_t>(in.e, array.cols);
  f.strips = ceil_div(in.e, array.cols);
  f.bands = array.rows / f.set_rows;
  const int64_t qc_max = std::clamp<int64_t>(std::min(array.ifmap_words, array.filter_words) / in.s, 1, in.c);
  f.channel_groups = ceil_div(in.c, qc_max);
  f.channels_per_pe = ceil_div(in.c, f.channel_groups);
  const int64_t pf_max = std::clamp<int64_t>(
      std::min(array.psum_words, array.filter_words / (f.channels_per_pe * in.s)), 1, in.m);
  f.filter_groups = ceil_div(in.m, pf_max);
  f.filters_per_pe = ceil_div(in.m, f.filter_groups);
  f.units = f.row_chunks * f.filter_groups * f.channel_groups * f.strips;
  f.rounds = ceil_div(f.units, f.bands);
  return f;
}

struct FilterWord {
  int round = -1;
  int64_t filter_row = 0, filter = 0, channel = 0, tap = 0;
  int64_t value = 0;
};

struct FilterSpad {
  int round = -1;         // the round whose weights it is being filled with or holds
  bool switched = false;  // shadow: its round has copied it into the active scratchpad
  std::vector<FilterWord> words;
};

struct InputWord {
  int unit = -1;
  int64_t channel = 0, col = 0;  // the PE's input row is fixed by its place in the set
  int64_t value = 0;
};

// The pf sums of one output column of one PE, or of the PE and the rows below it.
struct ColumnSums {
  int unit = -1;
  int64_t x = 0;
  int64_t rows_included = 1;
  int64_t ready_cycle = 0;  // the cycle it may be sent up
  std::vector<int64_t> sums;
};

struct OutputWord {
  int unit = -1;
  int64_t x = 0, filter = 0;
  int64_t value = 0;
};

struct Pe {
  FilterSpad active, shadow;  // shadow used with overlap_folds only
  int unit = -1;              // the unit whose MACs the PE runs (or ran last)
  bool computing = false;
  int64_t next_mac = 0;
  std::vector<InputWord> ifmap;
  std::vector<int64_t> psum;
  std::deque<ColumnSums> finished;  // own finished output columns, waiting for the sums from below
  std::deque<ColumnSums> arrived;   // sums from the PE below, to be added to the own ones
  std::deque<ColumnSums> to_above;  // to send up the link to the PE above, from their ready cycle
  std::deque<ColumnSums> to_port;   // a set's top row: full sums for its output port, from their ready cycle
  std::deque<OutputWord> emitting;  // top row of a set: sums leaving into the output tile, one per cycle
};

struct FilterBus {
  int unit = -1;  // -1: idle
  int64_t next = 0, total = 0;
};

struct DiagonalWord {  // what one diagonal bus carries in the current cycle
  int unit = -1;
  int64_t input_row = 0, channel = 0, col = 0;
};

struct RoundProgress {
  int64_t load_start = -1, loaded = -1, compute_start = -1, computed = -1, complete = -1;
  int64_t pes = 0;
  int64_t bus_words = 0;
  int64_t output_words = 0;
};

class RsArrayModel {
 public:
  RsArrayModel(const RsModelArray& array, const std::vector<RsModelInstruction>& instructions)
      : array_(array),
        instructions_(instructions),
        pes_(static_cast<size_t>(array.rows) * array.cols),
        buses_(array.rows) {
    for (Pe& pe : pes_) {
      pe.active.words.resize(array.filter_words);
      pe.shadow.words.resize(array.filter_words);
      pe.psum.resize(array.psum_words);
    }
    plan();
    progress_.resize(rounds_.size());
    for (const RsModelInstruction& in : instructions_) outputs_.emplace_back(in.e * in.q * in.m, 0);
  }

  bool done() const {
    return std::all_of(progress_.begin(), progress_.end(),
                       [](const RoundProgress& p) { return p.complete >= 0; });
  }

  void step() {
    control();
    step_macs();
    step_filter_buses();
    step_psum_chain();
    for (const Pe& p : pes_)
      max_waiting_columns_ = std::max(max_waiting_columns_, static_cast<int64_t>(p.finished.size()));
    ++cycle_;
  }

  int64_t cycle() const { return cycle_; }
  int64_t cycle_bound() const { return cycle_bound_; }

  RsModelRun result() const {
    RsModelRun run;
    run.foldings = foldings_;
    for (size_t g = 0; g < rounds_.size(); ++g) {
      const RoundProgress& p = progress_[g];
      run.rounds.push_back(RsModelRound{rounds_[g].instruction, static_cast<int64_t>(rounds_[g].units.size()),
                                        p.pes, p.load_start, p.loaded, p.compute_start, p.computed,
                                        p.complete});
    }
    run.outputs = outputs_;
    run.macs = macs_;
    run.psum_path_waits = psum_path_waits_;
    run.max_waiting_columns = max_waiting_columns_;
    return run;
  }

 private:
  Pe& pe(int64_t row, int64_t col) { return pes_[row * array_.cols + col]; }
  const RsModelInstruction& instruction_of(const UnitPlan& u) const { return instructions_[u.instruction]; }

  // Units in the document's order (row chunk, filter group, channel group, strip; strips innermost); a round
  // takes `bands` consecutive units of one instruction, the b-th of them in band b.
  void plan() {
    for (size_t index = 0; index < instructions_.size(); ++index) {
      const RsModelInstruction& in = instructions_[index];
      const RsModelFolding f = fold(array_, in);
      foldings_.push_back(f);
      cycle_bound_ = std::max(cycle_bound_, in.ready_cycle);
      int64_t in_round = 0;
      for (int64_t chunk = 0; chunk < f.row_chunks; ++chunk) {
        for (int64_t fg = 0; fg < f.filter_groups; ++fg) {
          for (int64_t cg = 0; cg < f.channel_groups; ++cg) {
            for (int64_t strip = 0; strip < f.strips; ++strip) {
              if (in_round == 0)
                rounds_.push_back(RoundPlan{static_cast<int>(index), in.ready_cycle, {}, 0, 0});
              UnitPlan u;
              u.instruction = static_cast<int>(index);
              u.round = static_cast<int>(rounds_.size()) - 1;
              u.first_row = in_round * f.set_rows;
              u.rows = block_size(in.r, f.set_rows, chunk);
              u.width = block_size(in.e, f.strip_cols, strip);
              u.filter_row0 = chunk * f.set_rows;
              u.filter0 = fg * f.filters_per_pe;
              u.filters = block_size(in.m, f.filters_per_pe, fg);
              u.channel0 = cg * f.channels_per_pe;
              u.channels = block_size(in.c, f.channels_per_pe, cg);
              u.output_row0 = strip * f.strip_cols;
              RoundPlan& round = rounds_.back();
              round.units.push_back(static_cast<int>(units_.size()));
              round.bus_words += u.rows * u.filters * u.channels * in.s;
              round.output_words += u.width * in.q * u.filters;
              // Generous: every unit alone, start to finish, with its load and drain several times over.
              cycle_bound_ += 4 * (u.filters * u.channels * in.s * (in.q + 1) + u.rows + u.filters + 4);
              units_.push_back(u);
              if (++in_round == f.bands) in_round = 0;
            }
          }
        }
      }
    }
    cycle_bound_ += 1000;
  }

  // ---- controller: decides at the start of a cycle from the state at the end of the previous one ----

  // Full overlap fills a shadow filter scratchpad; drain and none refill the one the MACs read.
  bool shadow() const { return array_.overlap_folds == arch::FoldOverlap::full; }

  void control() {
    const int64_t t = cycle_;
    // Compute: the round's weights are all in, no PE has MACs of an earlier round left, and every earlier
    // round has written its last sum (the partial-sum chains carry one round at a time).
    if (next_compute_ < next_load_) {
      const int g = next_compute_;
      const bool weights_in = progress_[g].bus_words == rounds_[g].bus_words;
      const bool pes_free = std::none_of(pes_.begin(), pes_.end(), [](const Pe& p) { return p.computing; });
      bool drained = true;
      for (int earlier = 0; earlier < g; ++earlier) drained = drained && progress_[earlier].complete >= 0;
      if (weights_in && pes_free && drained) start_compute(g, t);
    }
    // Load: the instruction is ready, every filter bus is idle and the scratchpads can take new weights.
    // With overlap_folds the shadow of a round that switched to it this cycle is free: the switch reads it
    // during this cycle, the first new word lands at its end.
    if (next_load_ < static_cast<int>(rounds_.size())) {
      const int g = next_load_;
      const bool buses_idle =
          std::all_of(buses_.begin(), buses_.end(), [](const FilterBus& b) { return b.unit < 0; });
      bool spads_free = true;
      if (shadow()) {
        spads_free = std::all_of(pes_.begin(), pes_.end(),
                                 [](const Pe& p) { return p.shadow.round < 0 || p.shadow.switched; });
      } else if (array_.overlap_folds == arch::FoldOverlap::drain) {
        // One scratchpad, refilled under the previous round's drain: its MACs are all done.
        spads_free = next_compute_ == g &&
                     std::none_of(pes_.begin(), pes_.end(), [](const Pe& p) { return p.computing; });
      } else {
        for (int earlier = 0; earlier < g; ++earlier)
          spads_free = spads_free && progress_[earlier].complete >= 0;
      }
      if (t >= rounds_[g].ready_cycle && buses_idle && spads_free) start_load(g, t);
    }
  }

  void start_load(int g, int64_t t) {
    std::vector<int> owner(pes_.size(), -1);
    for (const int index : rounds_[g].units) {
      const UnitPlan& u = units_[index];
      for (int64_t row = u.first_row; row < u.first_row + u.rows; ++row) {
        require(row < array_.rows, "a unit lies inside the array's rows", t, row, 0);
        buses_[row] = FilterBus{index, 0, u.filters * u.channels * instruction_of(u).s};
        for (int64_t col = 0; col < u.width; ++col) {
          require(col < array_.cols, "a unit lies inside the array's columns", t, row, col);
          int& holder = owner[row * array_.cols + col];
          require(holder < 0, "a PE holds at most one unit of a round", t, row, col);
          holder = index;
          ++progress_[g].pes;
        }
      }
    }
    progress_[g].load_start = t;
    ++next_load_;
  }

  void start_compute(int g, int64_t t) {
    for (const int index : rounds_[g].units) {
      const UnitPlan& u = units_[index];
      for (int64_t row = u.first_row; row < u.first_row + u.rows; ++row) {
        for (int64_t col = 0; col < u.width; ++col) {
          Pe& p = pe(row, col);
          if (shadow()) {
            require(p.shadow.round == g && !p.shadow.switched,
                    "a round switches to the shadow scratchpad filled for it", t, row, col);
            p.active = p.shadow;
            p.shadow.switched = true;
          }
          require(p.active.round == g, "a round computes on the weights loaded for it", t, row, col);
          require(p.ifmap.empty(), "a round starts with an empty input scratchpad", t, row, col);
          p.unit = index;
          p.computing = true;
          p.next_mac = 0;
        }
      }
    }
    progress_[g].compute_start = t;
    ++next_compute_;
  }

  // ---- MAC units ----

  // Order of a PE's MACs: output column x, then filter, channel, tap.
  void step_macs() {
    const int64_t t = cycle_;
    std::vector<DiagonalWord> diagonal;  // the words on the diagonal buses this cycle
    for (int64_t row = 0; row < array_.rows; ++row) {
      for (int64_t col = 0; col < array_.cols; ++col) {
        Pe& p = pe(row, col);
        if (!p.computing) continue;
        const UnitPlan& u = units_[p.unit];
        const RsModelInstruction& in = instruction_of(u);
        const int64_t per_column = u.filters * u.channels * in.s;
        const int64_t x = p.next_mac / per_column;
        const int64_t within = p.next_mac % per_column;
        const int64_t f = within / (u.channels * in.s);
        const int64_t ch = within / in.s % u.channels;
        const int64_t tap = within % in.s;
        const int64_t filter_row = u.filter_row0 + (row - u.first_row);
        const int64_t y = u.output_row0 + col;

        const int64_t slot = (f * u.channels + ch) * in.s + tap;
        require(slot < array_.filter_words, "a filter scratchpad holds at most F words", t, row, col);
        const FilterWord& weight = p.active.words[slot];
        require(weight.round == u.round && weight.filter_row == filter_row &&
                    weight.filter == u.filter0 + f && weight.channel == u.channel0 + ch && weight.tap == tap,
                "a MAC uses its own round's weight of its filter row, filter, channel and tap", t, row, col);

        // The set's PE(i, j) convolves filter row i with input row j*stride + i*dilation - pad_top.
        const int64_t input_row = y * in.stride + filter_row * in.dilation - in.pad_top;
        const int64_t input_col = x * in.stride + tap * in.dilation - in.pad_left;
        const int64_t channel = u.channel0 + ch;
        int64_t input = 0;  // zero outside the tile
        if (input_row >= 0 && input_row < in.ih && input_col >= 0 && input_col < in.iw) {
          auto held = std::find_if(p.ifmap.begin(), p.ifmap.end(), [&](const InputWord& w) {
            return w.unit == p.unit && w.channel == channel && w.col == input_col;
          });
          if (held == p.ifmap.end()) {
            // First use: the word comes over the diagonal bus of this input row, shared by every PE of the
            // set on that diagonal, which all want the same word in the same cycle.
            const DiagonalWord word{p.unit, input_row, channel, input_col};
            auto bus = std::find_if(diagonal.begin(), diagonal.end(), [&](const DiagonalWord& w) {
              return w.unit == word.unit && w.input_row == word.input_row;
            });
            if (bus == diagonal.end()) {
              diagonal.push_back(word);
            } else {
              require(bus->channel == word.channel && bus->col == word.col,
                      "a diagonal bus carries one input word per cycle", t, row, col);
            }
            p.ifmap.push_back(InputWord{p.unit, channel, input_col,
                                        in.input[(input_row * in.iw + input_col) * in.c + channel]});
            held = p.ifmap.end() - 1;
          }
          input = held->value;
          // Its last use in this column (the last filter); kept if the next column reads it too.
          if (f == u.filters - 1) {
            bool next_column_reads = false;
            for (int64_t next_tap = 0; next_tap < in.s && x + 1 < in.q; ++next_tap)
              next_column_reads = next_column_reads ||
                                  (x + 1) * in.stride + next_tap * in.dilation - in.pad_left == input_col;
            if (!next_column_reads) p.ifmap.erase(held);
          }
        }
        require(static_cast<int64_t>(p.ifmap.size()) <= array_.ifmap_words,
                "an input scratchpad holds at most I words", t, row, col);

        require(f < array_.psum_words, "a partial-sum scratchpad holds at most P words", t, row, col);
        if (ch == 0 && tap == 0) p.psum[f] = 0;
        p.psum[f] += weight.value * input;
        ++macs_;

        if (within == per_column - 1) {
          // The column's pf sums leave the scratchpad for the vertical chain; the bottom row of the set
          // sends them up the next cycle, the rows above wait for the sums from below.
          ColumnSums sums{p.unit, x, 1, t + 1,
                          std::vector<int64_t>(p.psum.begin(), p.psum.begin() + u.filters)};
          if (u.rows == 1) {
            p.to_port.push_back(std::move(sums));
          } else if (row == u.first_row + u.rows - 1) {
            p.to_above.push_back(std::move(sums));
          } else {
            p.finished.push_back(std::move(sums));
          }
        }
        if (++p.next_mac == in.q * per_column) {
          p.computing = false;
          RoundProgress& progress = progress_[u.round];
          progress.computed = std::max(progress.computed, t + 1);
        }
      }
    }
  }

  // ---- filter buses: one per array row, one word per cycle to every PE of the row in the unit ----

  void step_filter_buses() {
    const int64_t t = cycle_;
    for (int64_t row = 0; row < array_.rows; ++row) {
      FilterBus& bus = buses_[row];
      if (bus.unit < 0) continue;
      const UnitPlan& u = units_[bus.unit];
      const RsModelInstruction& in = instruction_of(u);
      const int64_t k = bus.next;  // the slot the MAC order reads it from: (filter, channel, tap)
      const int64_t f = k / (u.channels * in.s);
      const int64_t ch = k / in.s % u.channels;
      const int64_t tap = k % in.s;
      const int64_t filter_row = u.filter_row0 + (row - u.first_row);
      const FilterWord word{
          u.round,
          filter_row,
          u.filter0 + f,
          u.channel0 + ch,
          tap,
          in.filters[((filter_row * in.s + tap) * in.c + u.channel0 + ch) * in.m + u.filter0 + f]};
      for (int64_t col = 0; col < u.width; ++col) {
        Pe& p = pe(row, col);
        FilterSpad& target = shadow() ? p.shadow : p.active;
        if (shadow()) {
          require(target.round < 0 || target.round == u.round || target.switched,
                  "a shadow filter scratchpad is not overwritten before its round has switched to it", t, row,
                  col);
        } else {
          require(!p.computing, "a filter scratchpad is not overwritten while its PE's MACs read it", t, row,
                  col);
        }
        if (target.round != u.round) {
          target.round = u.round;
          target.switched = false;
        }
        require(k < array_.filter_words, "a filter scratchpad holds at most F words", t, row, col);
        target.words[k] = word;
      }
      RoundProgress& progress = progress_[u.round];
      if (++progress.bus_words == rounds_[u.round].bus_words) progress.loaded = t + 1;
      if (++bus.next == bus.total) bus = FilterBus{};
    }
  }

  // ---- the vertical psum chain and the output ports at the top of each set ----

  void step_psum_chain() {
    const int64_t t = cycle_;
    for (int64_t row = 0; row < array_.rows; ++row) {
      for (int64_t col = 0; col < array_.cols; ++col) {
        Pe& p = pe(row, col);
        // One column's sums per cycle go up the link to the PE above, the earliest round's first (units are
        // numbered in round order, a unit's columns in order).
        auto first = p.to_above.end();
        int64_t ready = 0;
        for (auto it = p.to_above.begin(); it != p.to_above.end(); ++it) {
          if (it->ready_cycle > t) continue;
          ++ready;
          if (first == p.to_above.end() ||
              std::make_pair(it->unit, it->x) < std::make_pair(first->unit, first->x))
            first = it;
        }
        if (ready > 1) ++psum_path_waits_;
        if (first != p.to_above.end()) {
          pe(row - 1, col).arrived.push_back(std::move(*first));
          p.to_above.erase(first);
        }
        // A set's top row queues its full sums at its output port.
        while (!p.to_port.empty() && p.to_port.front().ready_cycle <= t) {
          const ColumnSums& sums = p.to_port.front();
          const UnitPlan& u = units_[sums.unit];
          require(sums.rows_included == u.rows, "the sums reaching a set's output port include all its rows",
                  t, row, col);
          if (!p.emitting.empty()) ++psum_path_waits_;
          for (int64_t f = 0; f < u.filters; ++f)
            p.emitting.push_back(OutputWord{sums.unit, sums.x, f, sums.sums[f]});
          p.to_port.pop_front();
        }
      }
    }
    // Each PE adds the column's sums from below to its own and forwards them the next cycle.
    for (int64_t row = 0; row < array_.rows; ++row) {
      for (int64_t col = 0; col < array_.cols; ++col) {
        Pe& p = pe(row, col);
        require(p.arrived.size() <= 1, "a PE receives one column's sums from below per cycle", t, row, col);
        if (p.arrived.empty()) continue;
        ColumnSums below = std::move(p.arrived.front());
        p.arrived.clear();
        // Sums from below carry their output column; a shorter set of the next round can overtake the
        // previous round's, so the PE finds its own sums of that column rather than taking the oldest.
        auto mine = std::find_if(p.finished.begin(), p.finished.end(), [&](const ColumnSums& sums) {
          return sums.unit == below.unit && sums.x == below.x;
        });
        require(mine != p.finished.end(),
                "sums from below meet the same output column's sums of the PE above", t, row, col);
        ColumnSums own = std::move(*mine);
        p.finished.erase(mine);
        for (size_t f = 0; f < own.sums.size(); ++f) own.sums[f] += below.sums[f];
        own.rows_included += below.rows_included;
        own.ready_cycle = t + 1;
        (row == units_[own.unit].first_row ? p.to_port : p.to_above).push_back(std::move(own));
      }
    }
    // Each top-row PE writes one sum per cycle into the output tile, where the partial sums of the other
    // channel groups and row chunks of the same outputs are added.
    for (int64_t row = 0; row < array_.rows; ++row) {
      for (int64_t col = 0; col < array_.cols; ++col) {
        Pe& p = pe(row, col);
        if (p.emitting.empty()) continue;
        const OutputWord word = p.emitting.front();
        p.emitting.pop_front();
        const UnitPlan& u = units_[word.unit];
        const RsModelInstruction& in = instruction_of(u);
        const int64_t y = u.output_row0 + col;
        outputs_[u.instruction][(y * in.q + word.x) * in.m + u.filter0 + word.filter] += word.value;
        RoundProgress& progress = progress_[u.round];
        require(progress.complete < 0, "a round writes no sum after its last", t, row, col);
        if (++progress.output_words == rounds_[u.round].output_words) progress.complete = t + 1;
      }
    }
  }

  RsModelArray array_;
  const std::vector<RsModelInstruction>& instructions_;
  std::vector<RsModelFolding> foldings_;
  std::vector<UnitPlan> units_;
  std::vector<RoundPlan> rounds_;
  int64_t cycle_bound_ = 0;

  int64_t cycle_ = 0;
  std::vector<Pe> pes_;  // row-major
  std::vector<FilterBus> buses_;
  int next_load_ = 0;
  int next_compute_ = 0;
  std::vector<RoundProgress> progress_;
  std::vector<std::vector<int64_t>> outputs_;
  int64_t macs_ = 0;
  int64_t psum_path_waits_ = 0;
  int64_t max_waiting_columns_ = 0;
};

}  // namespace

RsModelRun run_rs_cycle_model(const RsModelArray& array,
                              const std::vector<RsModelInstruction>& instructions) {
  if (array.rows < 1 || array.cols < 1)
    throw std::invalid_argument("RS cycle model: the array needs rows, cols >= 1");
  int64_t previous_ready = 0;
  for (const RsModelInstruction& in : instructions) {
    if (in.e < 1 || in.q < 1 || in.m < 1 || in.c < 1 || in.r < 1 || in.s < 1 || in.stride < 1 ||
        in.dilation < 1 || in.pad_top < 0 || in.pad_left < 0 || in.ih < 1 || in.iw < 1)
      throw std::invalid_argument("RS cycle model: every extent must be >= 1 and the paddings >= 0");
    if (static_cast<int64_t>(in.input.size()) != in.ih * in.iw * in.c ||
        static_cast<int64_t>(in.filters.size()) != in.r * in.s * in.c * in.m)
      throw std::invalid_argument("RS cycle model: the input must be ih x iw x c and the filters r*s*c x m");
    if (array.ifmap_words < in.s || array.filter_words < in.s || array.psum_words < 1)
      throw std::invalid_argument(
          "RS cycle model: a PE must hold a filter row and an input window (I, F >= s, P >= 1)");
    if (in.ready_cycle < previous_ready)
      throw std::invalid_argument("RS cycle model: ready cycles must not decrease");
    previous_ready = in.ready_cycle;
  }
  RsArrayModel model(array, instructions);
  while (!model.done()) {
    if (model.cycle() > model.cycle_bound())
      throw std::logic_error("RS cycle model: the controller made no progress (deadlock)");
    model.step();
  }
  return model.result();
}

}  // namespace tessera::testmodels
