// The limit on a convolution's or pool's spatial fields (image sides, filter or window sides, padding,
// stride, dilation): 2^24, far past any image, so that their sums and products (a padded side, a dilated
// filter's extent) stay inside int64 before anything is computed from them.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "ops/op_kind.hpp"

namespace tessera::ops {

constexpr int64_t kMaxSpatial = int64_t{1} << 24;

inline void check_spatial(std::initializer_list<std::pair<const char*, int64_t>> fields,
                          const FieldChecks& checks) {
  for (const auto& [name, value] : fields)
    if (value > kMaxSpatial)
      checks.fail(name, fmt::format("{} = {} is more than tessera models (2^24)", name, value),
                  "image sides, windows, padding, strides and dilations are at most 16777216");
}

}  // namespace tessera::ops
