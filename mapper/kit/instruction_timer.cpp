#include "mapper/kit/instruction_timer.hpp"

#include <algorithm>
#include <atomic>

#include "common/integer_math.hpp"

namespace tessera::mapper {

InstructionTimer::InstructionTimer(const arch::ArchSpec& spec)
    : timing_(spec.core.pe_array),
      rs_timing_(spec),
      pes_(static_cast<double>(spec.core.pe_array.rows) * spec.core.pe_array.cols),
      id_([] {
        static std::atomic<uint64_t> timers{0};
        return ++timers;
      }()) {}

InstructionProfile InstructionTimer::matmul(arch::Dataflow dataflow, int64_t m, int64_t n, int64_t k) const {
  const arch::PeArrayTiming& timing = timing_;
  const bool os = dataflow == arch::Dataflow::os;
  const int64_t outer_extent = dataflow == arch::Dataflow::ws ? n : m;
  const int64_t inner_extent = os ? n : k;
  const int64_t outer_block = os ? timing.rows() : timing.cols();
  const int64_t inner_block = os ? timing.cols() : timing.rows();
  const int64_t stream = dataflow == arch::Dataflow::ws ? m : dataflow == arch::Dataflow::is ? n : k;
  const int64_t outer_count = ceil_div(outer_extent, outer_block);
  const int64_t inner_count = ceil_div(inner_extent, inner_block);
  const int64_t outer_last = outer_extent - (outer_count - 1) * outer_block;
  const int64_t inner_last = inner_extent - (inner_count - 1) * inner_block;
  const int64_t outer_first = outer_count >= 2 ? outer_block : outer_last;
  const int64_t inner_first = inner_count >= 2 ? inner_block : inner_last;
  auto fold = [&](int64_t outer, int64_t inner) {
    return os ? arch::Fold{outer, inner, stream} : arch::Fold{inner, outer, stream};
  };
  auto gap = [&](const arch::Fold& a, const arch::Fold& b) {
    arch::PePipeline pipeline;
    const int64_t first = timing.schedule(dataflow, a, 0, pipeline).stream_start;
    return timing.schedule(dataflow, b, 0, pipeline).stream_start - first;
  };
  auto within = [&](int64_t outer) -> int64_t {
    if (inner_count < 2) return 0;
    return (inner_count - 2) * gap(fold(outer, inner_block), fold(outer, inner_block)) +
           gap(fold(outer, inner_block), fold(outer, inner_last));
  };
  InstructionProfile result;
  result.folds = outer_count * inner_count;
  result.stream_cycles = result.folds * stream;
  int64_t interval = within(outer_last) + (outer_count - 1) * within(outer_block);
  if (outer_count >= 2) {
    interval += (outer_count - 2) * gap(fold(outer_block, inner_last), fold(outer_block, inner_first)) +
                gap(fold(outer_block, inner_last), fold(outer_last, inner_first));
  }
  result.cross = gap(fold(outer_last, inner_last), fold(outer_first, inner_first));
  result.interval = interval + result.cross;
  arch::PePipeline fresh;
  result.lead_in = timing.schedule(dataflow, fold(outer_first, inner_first), 0, fresh).stream_start;
  arch::PePipeline last;
  const arch::FoldTiming tail = timing.schedule(dataflow, fold(outer_last, inner_last), 0, last);
  result.tail = tail.complete - tail.stream_start;
  return result;
}

std::shared_ptr<const InstructionTimer::RsProfile> InstructionTimer::row_stationary(
    const arch::ConvTileShape& shape, DType dtype) const {
  const std::array<int64_t, 8> key = {shape.e, shape.m, shape.c,  shape.q,
                                      shape.r, shape.s, shape.ih, static_cast<int64_t>(dtype)};
  // The search asks for one tile shape several times running (its six loop orders, the edge waste): this
  // thread's last answer comes back without the lock and the lookup.
  thread_local uint64_t last_timer = 0;
  thread_local std::array<int64_t, 8> last_key{};
  thread_local std::shared_ptr<const RsProfile> last_profile;
  if (last_timer == id_ && last_key == key) return last_profile;
  auto remember = [&](const std::shared_ptr<const RsProfile>& profile) {
    last_timer = id_, last_key = key, last_profile = profile;
    return profile;
  };
  {
    std::lock_guard<std::mutex> lock(rs_cache_mutex_);
    auto found = rs_cache_.find(key);
    if (found != rs_cache_.end()) return remember(found->second);
  }
  auto entry = std::make_shared<RsProfile>();
  // The rounds of one instruction from a fresh pipeline, and the PE slots the rounds leave idle (folding of
  // sets onto the array). The next identical instruction's first round then starts as RsTiming::schedule
  // would start it: its load once the buses and scratchpads allow, its MACs once that load is in and this
  // instruction's last round has drained.
  InstructionProfile& result = entry->profile;
  arch::RsPipeline pipeline;
  int64_t first_start = -1, first_load = 0, last_start = 0, last_complete = 0;
  double used = 0, slots = 0;
  const double pes = pes_;
  rs_timing_.for_each_round(shape, dtype, [&](const arch::RsRound& round) {
    const arch::RsRoundTiming t = rs_timing_.schedule(round, 0, pipeline);
    if (first_start < 0)
      first_start = t.compute_start, first_load = round.load, result.lead_in = t.compute_start;
    ++result.folds;
    result.stream_cycles += round.compute;
    last_start = t.compute_start, last_complete = t.complete;
    used += static_cast<double>(round.pes) * round.compute;
    slots += pes * round.compute;
  });
  arch::RsPipeline next = pipeline;
  const arch::RsRoundTiming second = rs_timing_.schedule(arch::RsRound{first_load, 0, 0, 0}, 0, next);
  const int64_t second_start = second.compute_start;
  result.interval = second_start - first_start;
  result.tail = last_complete - last_start;
  result.cross = 0;
  entry->edge_waste = slots > 0 ? 1.0 - used / slots : 0.0;
  std::lock_guard<std::mutex> lock(rs_cache_mutex_);
  return remember(rs_cache_.emplace(key, std::move(entry)).first->second);
}

}  // namespace tessera::mapper
