// Jobs handed to a few threads kept for a while (a functional run's PE arithmetic: docs/design-notes.md,
// "A functional run's arithmetic on --threads threads"). The owner submits jobs and later waits for each;
// while it waits it runs queued jobs itself, so `threads` threads work in all, the owner among them.
// Nothing here knows what a job computes: who submits one makes sure nothing it reads changes until it is
// waited for.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class JobPool {
 public:
  struct Job;
  using Ticket = std::shared_ptr<Job>;

  // threads - 1 helper threads (none for 1: every job then runs in the owner's wait). A thread the system
  // refuses leaves its share to the others.
  explicit JobPool(int threads);
  ~JobPool();  // waits for every job, then joins the helpers
  JobPool(const JobPool&) = delete;
  JobPool& operator=(const JobPool&) = delete;

  Ticket submit(std::function<void()> work);
  // Returns once `job` is done (running it here if no thread has taken it yet, and other queued jobs while
  // another thread runs it); rethrows what it threw. Waiting again for a done job returns at once.
  void wait(const Ticket& job);
  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

 private:
  void run(std::unique_lock<std::mutex>& lock, const Ticket& job);  // with the lock held; returns with it
  void helper();

  std::mutex mutex_;
  std::condition_variable work_ready_, job_done_;
  std::deque<Ticket> queue_;
  bool closing_ = false;
  std::vector<std::thread> helpers_;
};

struct JobPool::Job {
  std::function<void()> work;
  enum class State { queued, running, done } state = State::queued;
  std::exception_ptr error;
};

}  // namespace tessera
