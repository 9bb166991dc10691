#include "mapper/mapping.hpp"

#include <fmt/format.h>

namespace tessera::mapper {

const char* name_of(Dim dim) {
  switch (dim) {
    case Dim::m:
      return "m";
    case Dim::n:
      return "n";
    case Dim::k:
      return "k";
  }
  return "?";
}

std::string GemmMapping::order_name() const {
  return std::string(name_of(order[0])) + name_of(order[1]) + name_of(order[2]);
}

std::string GemmMapping::label() const {
  return dataflow_label(dataflow, direct);
}

std::string dataflow_label(arch::Dataflow dataflow, bool direct) {
  const std::string name = arch::name_of(dataflow);
  return direct && dataflow != arch::Dataflow::rs ? name + "-direct" : name;
}

std::string GemmMapping::describe() const {
  const char* buffering =
      double_buffer_inputs ? (double_buffer_output ? "io" : "i") : (double_buffer_output ? "o" : "-");
  return fmt::format("{}{} cores {}x{}x{} tile {}x{}x{} {} db={}{}", arch::name_of(dataflow),
                     direct ? " direct" : "", split_m, split_n, split_k, tile_m, tile_n, tile_k, order_name(),
                     buffering, packed_groups > 1 ? fmt::format(" pack={}", packed_groups) : std::string());
}

bool GemmMapping::operator==(const GemmMapping& other) const {
  return dataflow == other.dataflow && split_m == other.split_m && split_n == other.split_n &&
         split_k == other.split_k && tile_m == other.tile_m && tile_n == other.tile_n &&
         tile_k == other.tile_k && order == other.order &&
         double_buffer_inputs == other.double_buffer_inputs &&
         double_buffer_output == other.double_buffer_output && packed_groups == other.packed_groups &&
         direct == other.direct;
}

}  // namespace tessera::mapper
