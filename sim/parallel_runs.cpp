// Machine::run_timing: timing-only runs in forked children (sim/machine.hpp). A child runs one program and
// writes its RunResult to a pipe in the flat form below; the parent reads the children in order.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "sim/machine.hpp"
#include "sim/stats.hpp"

namespace tessera::sim {

namespace {

// A RunResult of a timing-only run without trace, as bytes: its end, every declared counter (sim/stats.hpp),
// each unit's identity, cycles per cause and counters, and the host time.
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
    TESSERA_ASSERT(at_ + size <= bytes_.size(), "a child's result is whole");
    std::string value = bytes_.substr(at_, size);
    at_ += size;
    return value;
  }

 private:
  void take(void* into, size_t size) {
    TESSERA_ASSERT(at_ + size <= bytes_.size(), "a child's result is whole");
    std::memcpy(into, bytes_.data() + at_, size);
    at_ += size;
  }
  const std::string& bytes_;
  size_t at_ = 0;
};

std::string serialize(const RunResult& result) {
  Writer out;
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

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    done += static_cast<size_t>(wrote);
  }
}

}  // namespace

std::vector<RunResult> Machine::run_timing(const std::vector<const arch::Program*>& programs, int workers) {
  std::vector<RunResult> results(programs.size());
  const RunOptions timing{false, false};
  if (workers <= 1 || programs.size() <= 1) {
    for (size_t i = 0; i < programs.size(); ++i) results[i] = run(*programs[i], timing);
    return results;
  }
  struct Child {
    pid_t pid = -1;
    int fd = -1;
    size_t index = 0;
  };
  std::vector<Child> running;
  std::vector<bool> failed(programs.size(), false);
  size_t next = 0;
  auto launch = [&](size_t index) {
    int fds[2];
    if (::pipe(fds) != 0) {
      failed[index] = true;
      return;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::string message = "F";
      try {
        message = "R" + serialize(run(*programs[index], timing));
      } catch (...) {
        message = "F";  // the parent runs it again and throws the error itself
      }
      write_all(fds[1], message);
      ::close(fds[1]);
      ::_exit(0);  // no destructors, no flushing of the parent's buffers
    }
    ::close(fds[1]);
    if (pid < 0) {
      ::close(fds[0]);
      failed[index] = true;
      return;
    }
    running.push_back(Child{pid, fds[0], index});
  };
  std::vector<std::string> received(programs.size());
  while (next < programs.size() || !running.empty()) {
    while (running.size() < static_cast<size_t>(workers) && next < programs.size()) launch(next++);
    if (running.empty()) continue;
    // Read whichever child has written; a child is done when its pipe closes.
    std::vector<pollfd> fds;
    for (const Child& child : running) fds.push_back(pollfd{child.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      TESSERA_ASSERT(false, "poll on the children's pipes works");
    }
    for (size_t f = fds.size(); f-- > 0;) {
      if (fds[f].revents == 0) continue;
      const Child child = running[f];
      char buffer[1 << 16];
      const ssize_t got = ::read(child.fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) {
        received[child.index].append(buffer, static_cast<size_t>(got));
        continue;
      }
      ::close(child.fd);
      int status = 0;
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
      const std::string& message = received[child.index];
      if (!message.empty() && message[0] == 'R')
        results[child.index] = deserialize(message.substr(1));
      else
        failed[child.index] = true;
      received[child.index].clear();
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(f));
    }
  }
  for (size_t i = 0; i < programs.size(); ++i)
    if (failed[i]) results[i] = run(*programs[i], timing);
  return results;
}

}  // namespace tessera::sim
