// The writer's side of a tile program's text (docs/tile-program.md): the canonical spelling of the values
// every line kind writes (regions, cores, pitches), shared by the program writer and each instruction kind's
// operation. What it writes, LineReader reads back the same.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arch/isa/program.hpp"

namespace tessera::arch {

class LineWriter {
 public:
  explicit LineWriter(const Program& program) : program_(program) {}
  const Program& program() const { return program_; }

  template <typename... Args>
  void put(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out_), format, std::forward<Args>(args)...);
  }
  // A pitch of 0 means packed rows, which the text leaves out.
  void write_pitch(std::string_view key, int64_t pitch_bytes);
  void write_region(const TensorRegion& region);
  void write_core(int core);
  // The canonical compact list (docs/tile-program.md, "Lists"): a run of three or more consecutive ascending
  // non-negative values as a-b, of three or more equal values as v*N, anything else value by value.
  void write_integer_list(const std::vector<int64_t>& values);

 protected:
  const Program& program_;
  fmt::memory_buffer out_;
};

}  // namespace tessera::arch
