#include "common/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace tessera {

void for_each_item(int64_t count, int threads, const std::function<void(int64_t)>& work) {
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (int64_t item = next++; item < count; item = next++) {
      try {
        work(item);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = count;  // the others stop after their current item
      }
    }
  };
  std::vector<std::thread> pool;
  const int64_t wanted = std::max<int64_t>(1, std::min<int64_t>(threads, count));
  for (int64_t i = 1; i < wanted; ++i) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;
    }
  }
  worker();
  for (auto& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace tessera
