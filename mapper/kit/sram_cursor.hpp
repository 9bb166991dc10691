// SRAM handed out in order, each buffer on a 64-byte boundary: how the attention and MoE forms lay out a
// core's buffers.
#pragma once

#include <cstdint>

namespace tessera::mapper {

inline uint64_t align64(uint64_t address) {
  return (address + 63) / 64 * 64;
}

// Hands out SRAM from address `at` (0 at first).
struct SramCursor {
  uint64_t at = 0;
  uint64_t take(int64_t bytes) {
    const uint64_t start = at;
    at = align64(at + static_cast<uint64_t>(bytes));
    return start;
  }
};

}  // namespace tessera::mapper
