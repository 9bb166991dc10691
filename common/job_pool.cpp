#include "common/job_pool.hpp"

#include <algorithm>
#include <system_error>

namespace tessera {

JobPool::JobPool(int threads) {
  for (int i = 1; i < threads; ++i) {
    try {
      helpers_.emplace_back([this] { helper(); });
    } catch (const std::system_error&) {
      break;
    }
  }
}

JobPool::~JobPool() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!queue_.empty()) {
      const Ticket job = queue_.front();
      queue_.pop_front();
      run(lock, job);
    }
    closing_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& thread : helpers_) thread.join();
}

JobPool::Ticket JobPool::submit(std::function<void()> work) {
  auto job = std::make_shared<Job>();
  job->work = std::move(work);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(job);
  }
  if (!helpers_.empty()) work_ready_.notify_one();
  return job;
}

void JobPool::run(std::unique_lock<std::mutex>& lock, const Ticket& job) {
  job->state = Job::State::running;
  lock.unlock();
  try {
    job->work();
  } catch (...) {
    job->error = std::current_exception();
  }
  job->work = nullptr;  // what it captured goes now, not with the ticket
  lock.lock();
  job->state = Job::State::done;
  job_done_.notify_all();
}

void JobPool::wait(const Ticket& job) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (job->state == Job::State::queued) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), job));
    run(lock, job);
  }
  while (job->state != Job::State::done) {
    if (!queue_.empty()) {
      const Ticket other = queue_.front();
      queue_.pop_front();
      run(lock, other);
    } else {
      job_done_.wait(lock);
    }
  }
  if (job->error) std::rethrow_exception(job->error);
}

void JobPool::helper() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, and nothing left
    const Ticket job = queue_.front();
    queue_.pop_front();
    run(lock, job);
  }
}

}  // namespace tessera
