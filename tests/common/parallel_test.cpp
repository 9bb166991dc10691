// for_each_item (common/parallel.hpp): every item exactly once whatever the thread count, and an item's
// exception reaches the caller after every thread has stopped.
#include "common/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace tessera {
namespace {

TEST(ForEachItem, RunsEveryItemExactlyOnceOnAnyNumberOfThreads) {
  for (int threads : {1, 2, 7, 64}) {
    for (int64_t count : {0, 1, 3, 1000}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(count));
      for_each_item(count, threads, [&](int64_t item) { ++seen[static_cast<size_t>(item)]; });
      for (int64_t item = 0; item < count; ++item)
        EXPECT_EQ(seen[static_cast<size_t>(item)].load(), 1)
            << "item " << item << " on " << threads << " threads";
    }
  }
}

TEST(ForEachItem, AnItemsExceptionIsRethrownOnceEveryThreadHasStopped) {
  std::atomic<int> running{0};
  EXPECT_THROW(for_each_item(100, 4,
                             [&](int64_t item) {
                               ++running;
                               --running;
                               if (item == 10) throw std::runtime_error("item 10");
                             }),
               std::runtime_error);
  EXPECT_EQ(running.load(), 0);
}

}  // namespace
}  // namespace tessera
