#include "mapper/kit/tiling.hpp"

#include <cstddef>

namespace tessera::mapper {

const char* name_of(Dim dim) {
  constexpr const char* kNames[] = {"m", "n", "k"};  // by the enum's value
  return kNames[static_cast<std::size_t>(dim)];
}

}  // namespace tessera::mapper
