// Persistent worker processes (docs/design-notes.md, "Parallel candidates"): forked once from this process,
// so each starts with a copy of everything it holds (the elaborated SystemC model above all), then fed
// requests one at a time over a socket pair and answering each with a reply. A worker serves requests by
// calling `serve` in its own process; it dies with its parent (PR_SET_PDEATHSIG) and exits when its socket
// closes. The pool knows nothing of what the bytes mean: Machine::run_timing sends programs and reads
// results.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessera::sim {

class WorkerPool {
 public:
  // Answers a request inside a worker. Returns the reply, or nothing when the worker should not serve again
  // (its process state may be damaged, e.g. a model left blocked by a deadlock): it exits after replying
  // `failed_reply` and the pool replaces it when next needed.
  using Serve = std::function<std::optional<std::string>(const std::string& request)>;

  // No process is started until a request is sent.
  WorkerPool(int workers, Serve serve, std::string failed_reply);
  // Closes every worker's socket, kills and reaps it: no worker outlives the pool, none is left a zombie.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }
  bool busy(int worker) const { return workers_[static_cast<size_t>(worker)].busy; }
  // Hands `request` to an idle worker, forking it first if it is not running. False when that failed (no
  // process, a broken socket): the worker is then idle again, without a process.
  bool send(int worker, const std::string& request);

  struct Reply {
    int worker = 0;
    std::optional<std::string> bytes;  // nothing: the worker died before replying (it is reaped)
  };
  // Waits until at least one busy worker has replied or died; returns those, each worker idle again. Without
  // `block`, returns what has arrived already (perhaps nothing).
  std::vector<Reply> wait_replies(bool block = true);

  // The processes started so far (a dead worker's replacement counts again), for tests.
  int started() const { return started_; }

 private:
  struct Worker {
    pid_t pid = -1;
    int socket = -1;  // the parent's end
    bool busy = false;
    std::string received;  // the reply so far
  };
  bool start(Worker& worker);
  void stop(Worker& worker);
  [[noreturn]] void serve_forever(int socket);

  Serve serve_;
  std::string failed_reply_;
  std::vector<Worker> workers_;
  pid_t parent_ = -1;
  int started_ = 0;
};

}  // namespace tessera::sim
