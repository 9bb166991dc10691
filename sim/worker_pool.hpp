// Persistent worker processes (docs/design-notes.md, "Parallel candidates"): forked once from this process,
// so each starts with a copy of everything it holds (the elaborated SystemC model above all), then fed
// requests over a socket pair and answering each with a reply, in order. A request's bytes travel in a
// memory file whose descriptor goes over the socket (the socket itself holds a few hundred KB, a program
// tens of MB): sending never waits for the worker, so a worker can be handed its next request while it
// serves one. A worker serves requests by calling `serve` in its own process; it dies with its parent
// (PR_SET_PDEATHSIG) and exits when its socket closes. The pool knows nothing of what the bytes mean:
// Machine::run_timing sends programs and reads results.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <deque>
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

  // No process is started until a request is sent or start_all is called.
  WorkerPool(int workers, Serve serve, std::string failed_reply);
  // Closes every worker's socket, kills and reaps it: no worker outlives the pool, none is left a zombie.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }
  // Forks every worker that is not running (one that cannot be started is tried again at its next request).
  // Best done while this process is small: every page it holds at the fork is shared copy-on-write, and each
  // one it writes afterwards costs it a page fault.
  void start_all();
  // The requests a worker has been sent and not yet answered.
  int in_flight(int worker) const { return workers_[static_cast<size_t>(worker)].in_flight; }
  // Hands `request` to a worker, after those it has not answered yet, forking it first if it is not
  // running. Does not wait for the worker to read it. False when that failed (no process, a broken socket,
  // no memory file): the request is not in flight.
  bool send(int worker, const std::string& request);

  struct Reply {
    int worker = 0;
    // Nothing: the worker died before replying (it is reaped; every request it had not answered gets such a
    // reply), or it exited after replying `failed_reply` to an earlier request.
    std::optional<std::string> bytes;
  };
  // Waits until at least one worker with requests in flight has replied or died; returns the replies, each
  // worker's in the order of its requests. Without `block`, returns what has arrived already (perhaps
  // nothing).
  std::vector<Reply> wait_replies(bool block = true);

  // The processes started so far (a dead worker's replacement counts again), for tests.
  int started() const { return started_; }

 private:
  struct Worker {
    pid_t pid = -1;
    int socket = -1;  // the parent's end
    int in_flight = 0;
    std::deque<int> files;  // the memory files of the requests in flight, in order
    std::string received;   // replies so far
  };
  bool start(Worker& worker);
  void stop(Worker& worker);
  // Stops the worker; each request it had not answered gets a reply without bytes.
  void lose(size_t index, std::vector<Reply>& replies);
  [[noreturn]] void serve_forever(int socket);

  Serve serve_;
  std::string failed_reply_;
  std::vector<Worker> workers_;
  std::vector<int> free_files_;  // memory files no request in flight uses
  pid_t parent_ = -1;
  int started_ = 0;
};

}  // namespace tessera::sim
