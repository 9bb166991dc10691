// Machine::run_timing: timing-only runs in persistent worker processes (sim/machine.hpp,
// sim/worker_pool.hpp). A worker receives a program as its text and its cycle bound, runs it on its copy of
// the model and replies with its RunResult in the flat form below.
#include <cstring>
#include <exception>
#include <string>

#include "arch/isa/program_text.hpp"
#include "common/error.hpp"
#include "sim/machine.hpp"
#include "sim/stats.hpp"
#include "sim/worker_pool.hpp"

namespace tessera::sim {

namespace {

// A RunResult of a timing-only run without trace, as bytes: whether it stopped at its bound, its end, every
// declared counter (sim/stats.hpp), each unit's identity, cycles per cause and counters, and the host time.
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
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
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
    std::string value = bytes_.substr(at_, size);
    at_ += size;
    return value;
  }

 private:
  void take(void* into, size_t size) {
    TESSERA_ASSERT(at_ + size <= bytes_.size(), "a worker's message is whole");
    std::memcpy(into, bytes_.data() + at_, size);
    at_ += size;
  }
  const std::string& bytes_;
  size_t at_ = 0;
};

std::string serialize(const RunResult& result) {
  Writer out;
  out.integer(result.stopped ? 1 : 0);
  out.integer(result.bound_cycles);
  out.integer(static_cast<int64_t>(result.end_ticks));
  for (const auto& counter : run_counters()) out.integer(result.*counter.member);
  for (const auto& counter : traffic_counters()) out.integer(result.traffic.*counter.member);
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
  for (const auto& counter : run_counters()) result.*counter.member = in.integer();
  for (const auto& counter : traffic_counters()) result.traffic.*counter.member = in.integer();
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

// A worker's request: the run's cycle bound, then the program in its text form, which reads back equal to it
// (arch/isa/program_text.hpp: read_program(write_program(p)) == p for a program numbered by appearance, as
// every lowering leaves its programs). The text is written before the bound is known.
std::string request_of(std::optional<int64_t> cycle_bound, const std::string& program_text) {
  Writer out;
  out.integer(cycle_bound ? 1 : 0);
  out.integer(cycle_bound.value_or(0));
  out.text(program_text);
  return out.bytes();
}

constexpr char kResult = 'R';
const std::string kFailed = "F";  // the worker could not run it: the parent runs it and throws its error

}  // namespace

std::optional<std::string> Machine::serve_worker_request(const std::string& request) {
  Reader in(request);
  RunOptions options{false, false, std::nullopt};
  const bool bounded = in.integer() != 0;
  const int64_t bound = in.integer();
  if (bounded) options.cycle_bound = bound;
  try {
    const arch::Program program = arch::read_program(in.text(), "(program sent to a worker)");
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
                                           int workers, const CycleBoundOf& bound_of) {
  std::vector<RunResult> results(count);
  std::vector<const RunResult*> finished(count, nullptr);
  auto bound = [&](size_t index) -> std::optional<int64_t> {
    return bound_of ? bound_of(index, finished) : std::nullopt;
  };
  auto run_here = [&](size_t index) {
    results[index] = run(program_of(index), RunOptions{false, false, bound(index)});
    finished[index] = &results[index];
  };
  // A program that travels to a worker as text costs about what simulating it costs (writing 1.5 us and
  // reading 1.7 us a tile instruction against 3.1 us simulated, on the 4096^3 GEMM): one worker beside the
  // parent loses to the parent alone (measured on 2 cores: 5.5 s against 4.3 s), so workers start from three.
  if (workers <= 2 || count <= 1) {
    for (size_t i = 0; i < count; ++i) run_here(i);
    return results;
  }
  // The parent is one of the `workers`: it makes the programs and the next one's text for the `workers - 1`
  // worker processes, hands them out and reads results, and runs a program itself (no text to write or read)
  // whenever every worker is busy and the next text is ready.
  const int processes = workers - 1;
  if (!workers_ || workers_->size() != processes)
    workers_ = std::make_unique<WorkerPool>(
        processes, [this](const std::string& request) { return serve_worker_request(request); }, kFailed);
  std::vector<size_t> on_worker(static_cast<size_t>(processes), SIZE_MAX);
  std::vector<bool> failed(count, false);         // a worker could not run it: run here, below
  std::vector<std::exception_ptr> errors(count);  // a run here threw this
  size_t next = 0, running = 0;
  std::optional<std::pair<size_t, std::string>> ready;  // the next program, as text
  auto make_ready = [&]() {
    if (!ready && next < count) {
      ready.emplace(next, arch::write_program(program_of(next)));
      ++next;
    }
  };
  auto take = [&](const std::vector<WorkerPool::Reply>& replies) {
    for (const WorkerPool::Reply& reply : replies) {
      --running;
      const size_t index = on_worker[static_cast<size_t>(reply.worker)];
      if (reply.bytes && !reply.bytes->empty() && (*reply.bytes)[0] == kResult) {
        results[index] = deserialize(reply.bytes->substr(1));
        finished[index] = &results[index];
      } else {
        failed[index] = true;
      }
    }
  };
  while (ready || next < count || running > 0) {
    for (int w = 0; w < processes; ++w) {
      if (workers_->busy(w)) continue;
      make_ready();
      if (!ready) break;
      const size_t index = ready->first;
      const bool sent = workers_->send(w, request_of(bound(index), ready->second));
      ready.reset();
      if (!sent) {
        failed[index] = true;  // no worker could take it (fork or socket failed): run here below
        continue;
      }
      on_worker[static_cast<size_t>(w)] = index;
      ++running;
    }
    make_ready();  // while the workers run
    if (running == static_cast<size_t>(processes) && ready && next < count) {
      const size_t index = next++;
      try {
        run_here(index);
      } catch (...) {
        // Thrown below, once the workers are done: not run again, since a run that failed here leaves this
        // model unable to run (Machine::run's broken_).
        errors[index] = std::current_exception();
      }
      take(workers_->wait_replies(false));  // whoever is done by now gets the ready text next
      continue;
    }
    if (running == 0) continue;
    take(workers_->wait_replies());
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);  // before any run here below: this model can run no more
  for (size_t i = 0; i < count; ++i)
    if (failed[i]) run_here(i);
  return results;
}

}  // namespace tessera::sim
