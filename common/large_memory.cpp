#include "common/large_memory.hpp"

#include <cstdint>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace tessera {

void advise_huge_pages(void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (data == nullptr || bytes < 2 * kHuge) return;
  // The whole huge pages inside the buffer (a large malloc is page-aligned, not huge-page aligned).
  const auto begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin)
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // advice: may be refused
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace tessera
