// JobPool (common/job_pool.hpp): every job runs exactly once whatever the thread count, a wait returns only
// once its job is done (running it if no thread has), a job's exception reaches its waiter, and the pool's
// end runs what is still queued.
#include "common/job_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tessera {
namespace {

TEST(JobPool, EveryJobRunsExactlyOnceAndIsDoneWhenItsWaitReturns) {
  for (int threads : {1, 2, 5}) {
    JobPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    constexpr int kJobs = 500;
    std::vector<std::atomic<int>> runs(kJobs);
    std::vector<int> results(kJobs, -1);
    std::vector<JobPool::Ticket> tickets;
    for (int i = 0; i < kJobs; ++i)
      tickets.push_back(pool.submit([&, i] {
        ++runs[static_cast<size_t>(i)];
        results[static_cast<size_t>(i)] = i * i;
      }));
    // Waited for in reverse: the last ones may still be queued, the first ones done or running.
    for (int i = kJobs - 1; i >= 0; --i) {
      pool.wait(tickets[static_cast<size_t>(i)]);
      EXPECT_EQ(results[static_cast<size_t>(i)], i * i) << threads << " threads";
      pool.wait(tickets[static_cast<size_t>(i)]);  // again: at once
    }
    for (int i = 0; i < kJobs; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)].load(), 1) << i;
  }
}

TEST(JobPool, OneThreadRunsAJobOnlyWhenItIsWaitedFor) {
  JobPool pool(1);
  int runs = 0;
  const JobPool::Ticket job = pool.submit([&] { ++runs; });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(runs, 0);
  pool.wait(job);
  EXPECT_EQ(runs, 1);
}

TEST(JobPool, AHelperRunsJobsWhileTheOwnerDoesSomethingElse) {
  JobPool pool(2);
  std::atomic<bool> ran{false};
  const JobPool::Ticket job = pool.submit([&] { ran = true; });
  for (int i = 0; i < 2000 && !ran; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(ran.load()) << "the helper took the job without a wait";
  pool.wait(job);
}

TEST(JobPool, AJobsExceptionReachesItsWaiterAndOthersStillRun) {
  for (int threads : {1, 3}) {
    JobPool pool(threads);
    std::atomic<int> others{0};
    std::vector<JobPool::Ticket> tickets;
    for (int i = 0; i < 20; ++i)
      tickets.push_back(pool.submit([&, i] {
        if (i == 7) throw std::runtime_error("job 7");
        ++others;
      }));
    for (int i = 0; i < 20; ++i) {
      if (i == 7) {
        EXPECT_THROW(pool.wait(tickets[7]), std::runtime_error);
        EXPECT_THROW(pool.wait(tickets[7]), std::runtime_error) << "every wait for it";
      } else {
        pool.wait(tickets[static_cast<size_t>(i)]);
      }
    }
    EXPECT_EQ(others.load(), 19);
  }
}

TEST(JobPool, ThePoolsEndRunsWhatIsStillQueued) {
  for (int threads : {1, 2}) {
    std::atomic<int> runs{0};
    {
      JobPool pool(threads);
      for (int i = 0; i < 50; ++i) pool.submit([&] { ++runs; });
    }
    EXPECT_EQ(runs.load(), 50) << threads << " threads";
  }
}

}  // namespace
}  // namespace tessera
