// An input filled with a rope op's cos/sin table: `fill=rope_table position=P base=B` (docs/tile-program.md).
#pragma once

#include <cstdint>

#include "arch/isa/fields.hpp"

namespace tessera::arch {

// The table of ops/input_generator.hpp's rope_table_fp32, in place of the generator's pseudorandom values:
// cos in the first half of a row, sin in the second, from token `position` on.
struct RopeTableFill {
  static constexpr const char* kKeyword = "rope_table";

  int64_t position = 0;
  double base = 10000;

  template <class Visit>
  static void fields(Visit&& visit) {
    visit("position", &RopeTableFill::position), visit("base", &RopeTableFill::base);
  }
  bool operator==(const RopeTableFill& other) const { return equal_fields(*this, other); }
};

}  // namespace tessera::arch
