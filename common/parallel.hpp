// Work spread over a few threads, for the places that have independent items (the reference's row blocks, a
// report's programs): no pool kept, nothing shared but the counter of the next item.
#pragma once

#include <cstdint>
#include <functional>

namespace tessera {

// work(item) for items 0 .. count - 1 on up to `threads` threads (this one among them), each taking the next
// item as it finishes one. A thread the system refuses leaves its items to the others (never a joinable
// thread destroyed). The first exception thrown by `work` is rethrown here once every thread has stopped;
// items not yet started are then skipped.
void for_each_item(int64_t count, int threads, const std::function<void(int64_t)>& work);

}  // namespace tessera
