// Machine::run_timing: timing-only runs in persistent worker processes (sim/machine.hpp,
// sim/worker_pool.hpp). A worker receives a program in its binary form (arch/isa/program_binary.hpp) and its
// cycle bound, runs it on its copy of the model and replies with its RunResult in the flat form below.
#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <exception>
#include <string>

#include "arch/isa/program_binary.hpp"
#include "common/counters.hpp"
#include "common/error.hpp"
#include "sim/machine.hpp"
#include "sim/worker_pool.hpp"

namespace tessera::sim {

namespace {

// A RunResult of a timing-only run without trace, as bytes: whether it stopped at its bound, its end, every
// declared counter (common/counters.hpp), each unit's identity, cycles per cause and counters, and the host
// time.
class Writer {
 public:
  void integer(int64_t value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof value); }
  void real(double value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof value); }
  void text(const std::string& value) {
    integer(static_cast<int64_t>(value.size()));
    bytes_ += value;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  int64_t integer() {
    int64_t value = 0;
    take(&value, sizeof value);
    return value;
  }
  double real() {
    double value = 0;
    take(&value, sizeof value);
    return value;
  }
  std::string text() {
    const auto size = static_cast<size_t>(integer());
    TESSERA_ASSERT(at_ + size <= bytes_.size(), "a worker's message is whole");
    std::string value(bytes_.substr(at_, size));
    at_ += size;
    return value;
  }
  // What is left of the message.
  std::string_view rest() {
    const std::string_view rest = bytes_.substr(at_);
    at_ = bytes_.size();
    return rest;
  }

 private:
  void take(void* into, size_t size) {
    TESSERA_ASSERT(at_ + size <= bytes_.size(), "a worker's message is whole");
    std::memcpy(into, bytes_.data() + at_, size);
    at_ += size;
  }
  std::string_view bytes_;
  size_t at_ = 0;
};

std::string serialize(const RunResult& result) {
  Writer out;
  out.integer(result.stopped ? 1 : 0);
  out.integer(result.bound_cycles);
  out.integer(static_cast<int64_t>(result.end_ticks));
  for (const auto& counter : run_counters()) out.integer(result.counters.*counter.member);
  out.integer(static_cast<int64_t>(result.units.size()));
  for (const UnitResult& unit : result.units) {
    out.integer(unit.core);
    out.integer(static_cast<int64_t>(unit.queue.kind));
    out.integer(unit.queue.index);
    out.text(unit.name);
    for (int64_t cycles : unit.cycles) out.integer(cycles);
    for (const auto& counter : unit_counters()) out.integer(unit.counters.*counter.member);
  }
  out.real(result.host_seconds);
  return out.bytes();
}

RunResult deserialize(const std::string& bytes) {
  Reader in(bytes);
  RunResult result;
  result.stopped = in.integer() != 0;
  result.bound_cycles = in.integer();
  result.end_ticks = static_cast<Tick>(in.integer());
  for (const auto& counter : run_counters()) result.counters.*counter.member = in.integer();
  result.units.resize(static_cast<size_t>(in.integer()));
  for (UnitResult& unit : result.units) {
    unit.core = static_cast<int>(in.integer());
    unit.queue.kind = static_cast<arch::QueueKind>(in.integer());
    unit.queue.index = static_cast<int>(in.integer());
    unit.name = in.text();
    for (int64_t& cycles : unit.cycles) cycles = in.integer();
    for (const auto& counter : unit_counters()) unit.counters.*counter.member = in.integer();
  }
  result.host_seconds = in.real();
  result.functional = false;
  return result;
}

// A worker's request: what follows (a program, or the index of one the worker makes itself), the run's
// cycle bound, then the program in its binary form, which reads back equal to it
// (arch/isa/program_binary.hpp), written after the bound in one string (tens of MB on a large GEMM), or the
// index.
constexpr int64_t kProgramFollows = 0, kIndexFollows = 1;

Writer request_head(int64_t follows, std::optional<int64_t> cycle_bound) {
  Writer out;
  out.integer(follows);
  out.integer(cycle_bound ? 1 : 0);
  out.integer(cycle_bound.value_or(0));
  return out;
}

std::string request_of(std::optional<int64_t> cycle_bound, const arch::Program& program) {
  std::string request = request_head(kProgramFollows, cycle_bound).bytes();
  arch::append_program_binary(program, request);
  return request;
}

std::string request_of(std::optional<int64_t> cycle_bound, size_t index) {
  Writer out = request_head(kIndexFollows, cycle_bound);
  out.integer(static_cast<int64_t>(index));
  return out.bytes();
}

constexpr char kResult = 'R';
const std::string kFailed = "F";  // the worker could not run it: the parent runs it and throws its error

}  // namespace

std::optional<std::string> Machine::serve_worker_request(const std::string& request) {
  Reader in(request);
  RunOptions options{false, false, std::nullopt};
  const int64_t follows = in.integer();
  const bool bounded = in.integer() != 0;
  const int64_t bound = in.integer();
  if (bounded) options.cycle_bound = bound;
  try {
    if (follows == kIndexFollows) {
      // This worker's copy of the parent holds the caller's program_of and everything it reads: it was
      // forked by the run_timing call that sends these (workers_make_).
      TESSERA_ASSERT(workers_make_, "a worker asked to make a program was forked to make them");
      const int64_t index = in.integer();
      return kResult + serialize(run((*workers_make_)(static_cast<size_t>(index)), options));
    }
    const arch::Program program = arch::read_program_binary(in.rest());
    return kResult + serialize(run(program, options));
  } catch (...) {
    return std::nullopt;  // a deadlock or fault may have left this model blocked: the worker is replaced
  }
}

int Machine::workers_started() const {
  return workers_ ? workers_->started() : 0;
}

std::vector<RunResult> Machine::run_timing(size_t count,
                                           const std::function<const arch::Program&(size_t)>& program_of,
                                           int workers, const CycleBoundOf& bound_of,
                                           const std::function<void(size_t, const RunResult&)>& result_in,
                                           ProgramsMadeBy made_by,
                                           const std::function<void(size_t)>& worker_lost) {
  std::vector<RunResult> results(count);
  std::vector<const RunResult*> finished(count, nullptr);
  auto bound = [&](size_t index) -> std::optional<int64_t> {
    return bound_of ? bound_of(index, finished) : std::nullopt;
  };
  auto run_here = [&](size_t index, const arch::Program& program) {
    results[index] = run(program, RunOptions{false, false, bound(index)});
    finished[index] = &results[index];
    if (result_in) result_in(index, results[index]);
  };
  if (workers <= 1 || count <= 1) {
    for (size_t i = 0; i < count; ++i) run_here(i, program_of(i));
    return results;
  }
  // The parent is one of the `workers`: it makes each program in turn and either hands it to the
  // `workers - 1` worker processes (its binary form: ~0.1 us a tile instruction to write and read, against
  // ~2.5 to lower and ~3 to simulate) or runs it itself. Sending does not wait for the worker
  // (sim/worker_pool.hpp), so a worker is handed programs ahead of the one it runs and never waits for the
  // parent to finish a lowering; the parent runs a program itself only when the least busy worker has
  // enough in hand to stay busy meanwhile: twice the program's instructions (the parent's run, then the
  // lowering of the next), once for the last program.
  // Never more worker processes than programs beside the one this process may run itself (issue "hardening
  // 2": --threads 1024 forked 1,023 workers, 8.3 GB, for 9 candidates). A pool forked larger for an earlier
  // batch is kept; only its first `processes` are sent programs.
  const int processes = static_cast<int>(std::min(static_cast<size_t>(workers), count)) - 1;
  // Made by the workers: each worker makes the programs it is sent the indices of, from its copy of this
  // process, so the pool is forked afresh here, where program_of and what it reads exist (a pool forked
  // earlier holds another call's); workers_make_ stays set for the call, for a worker forked again to
  // replace one that died.
  const bool made_there = made_by == ProgramsMadeBy::workers;
  struct MakeFor {
    const std::function<const arch::Program&(size_t)>*& make;
    ~MakeFor() { make = nullptr; }
  } make_for{workers_make_};
  if (made_there) {
    workers_.reset();
    workers_make_ = &program_of;
  }
  if (!workers_ || workers_->size() < processes) {
    // This process now makes programs and their binary forms of the same few sizes over and over, tens of MB
    // each on a large GEMM, and frees each once sent: keep the freed memory for the next one rather than
    // handing it back to the kernel and faulting it in again (the workers forked below inherit it).
    ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
    ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
    workers_ = std::make_unique<WorkerPool>(
        processes, [this](const std::string& request) { return serve_worker_request(request); }, kFailed);
    // Before the first program is made: a fork shares every page this process holds copy-on-write, and a
    // page written afterwards costs a fault (on a 4096^3 GEMM, forked after the first lowering, 40,000 more
    // faults than --threads 1).
    workers_->start_all();
  }
  std::vector<std::deque<size_t>> on_worker(static_cast<size_t>(processes));  // in flight, in order
  std::vector<int64_t> in_hand(static_cast<size_t>(processes), 0);            // their instructions
  std::vector<int64_t> instructions(count, 0);
  std::vector<bool> failed(count, false);         // a worker could not run it: run here, below
  std::vector<bool> lost(count, false);           // its worker died before replying
  std::vector<std::exception_ptr> errors(count);  // a run here threw this
  bool broken_here = false;                       // then this model can run no more: the workers run the rest
  auto take = [&](const std::vector<WorkerPool::Reply>& replies) {
    for (const WorkerPool::Reply& reply : replies) {
      const auto w = static_cast<size_t>(reply.worker);
      const size_t index = on_worker[w].front();
      on_worker[w].pop_front();
      in_hand[w] -= instructions[index];
      if (reply.bytes && !reply.bytes->empty() && (*reply.bytes)[0] == kResult) {
        results[index] = deserialize(reply.bytes->substr(1));
        finished[index] = &results[index];
        if (result_in) result_in(index, results[index]);
      } else {
        failed[index] = true;
        lost[index] = !reply.bytes;
      }
    }
  };
  // Made by the workers: a worker is kept `kAhead` indices in hand (one to run, one to start on as it ends),
  // and this process makes and runs each index that finds every worker with that many.
  constexpr int kAhead = 2;
  auto run_here_or_keep = [&](size_t index, const arch::Program& program) {
    try {
      run_here(index, program);
    } catch (...) {
      // Thrown below, once the workers are done: not run again, since a run that failed here leaves this
      // model unable to run (Machine::run's broken_).
      errors[index] = std::current_exception();
      broken_here = true;
    }
  };
  for (size_t index = 0; index < count; ++index) {
    if (made_there) {
      take(workers_->wait_replies(false));
      int least_busy = 0;
      for (int w = 1; w < processes; ++w)
        if (workers_->in_flight(w) < workers_->in_flight(least_busy)) least_busy = w;
      if (!broken_here && workers_->in_flight(least_busy) >= kAhead) {
        run_here_or_keep(index, program_of(index));
        continue;
      }
      if (!workers_->send(least_busy, request_of(bound(index), index))) {
        failed[index] = true;  // no worker could take it: run here below
        continue;
      }
      on_worker[static_cast<size_t>(least_busy)].push_back(index);
      continue;
    }
    const arch::Program& program = program_of(index);
    instructions[index] = program.instruction_count();
    take(workers_->wait_replies(false));
    const auto least_busy =
        static_cast<size_t>(std::min_element(in_hand.begin(), in_hand.end()) - in_hand.begin());
    const int64_t enough = (index + 1 == count ? 1 : 2) * instructions[index];
    if (!broken_here && in_hand[least_busy] >= enough) {
      run_here_or_keep(index, program);
      continue;
    }
    if (!workers_->send(static_cast<int>(least_busy), request_of(bound(index), program))) {
      failed[index] = true;  // no worker could take it (fork, memory file or socket failed): run here below
      continue;
    }
    on_worker[least_busy].push_back(index);
    in_hand[least_busy] += instructions[index];
  }
  for (int w = 0; w < processes; ++w)
    while (workers_->in_flight(w) > 0) take(workers_->wait_replies());
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);  // before any run here below: this model can run no more
  for (size_t i = 0; i < count; ++i) {
    if (!failed[i]) continue;
    if (lost[i] && worker_lost) worker_lost(i);
    run_here(i, program_of(i));
  }
  return results;
}

}  // namespace tessera::sim
