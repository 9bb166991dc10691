// Memory for the large buffers of a functional run (DRAM images, generated inputs, the float64 reference):
// asked for in 2 MiB pages before anything touches it. A 4096 x 4096 tensor in 4 KiB pages takes 8,192 page
// faults to fill and a TLB miss on nearly every tile row a DMA copies out of it (its rows are 8 KiB apart);
// in 2 MiB pages 16 of each. Linux gives them on request (transparent huge pages in "madvise" mode, Debian's
// default); elsewhere, or when refused, the memory is as before. Nothing here changes a byte's value.
#pragma once

#include <cstddef>
#include <vector>

namespace tessera {

// Asks for [data, data + bytes) in huge pages: call before the first touch. Small buffers are left alone.
void advise_huge_pages(void* data, size_t bytes);

// count value-initialised (zero) elements, in huge pages where large.
template <class T>
std::vector<T> large_zeroed(size_t count) {
  std::vector<T> out;
  out.reserve(count);
  advise_huge_pages(out.data(), count * sizeof(T));
  out.resize(count);
  return out;
}

}  // namespace tessera
