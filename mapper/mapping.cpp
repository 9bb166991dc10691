#include "mapper/mapping.hpp"

#include <fmt/format.h>

#include "mapper/cost.hpp"

namespace tessera::mapper {

std::string Mapping::order_name() const {
  return std::string(name_of(order[0])) + name_of(order[1]) + name_of(order[2]);
}

std::string Mapping::label() const {
  return form ? form->label(*this) : arch::name_of(dataflow);
}

std::string Mapping::describe() const {
  return form ? form->describe(*this) : label();
}

NamedValues Mapping::fields(const Cost& cost) const {
  return form ? form->fields(*this, cost) : NamedValues{{"form", std::string("none")}};
}

bool Mapping::operator==(const Mapping& other) const {
  const bool same_form = form == other.form || (form && other.form && form->same_form(*other.form));
  return same_form && choice == other.choice && dataflow == other.dataflow && split_m == other.split_m &&
         split_n == other.split_n && split_k == other.split_k && tile_m == other.tile_m &&
         tile_n == other.tile_n && tile_k == other.tile_k && order == other.order &&
         double_buffer_inputs == other.double_buffer_inputs &&
         double_buffer_output == other.double_buffer_output && fusion == other.fusion &&
         (epilogue_pass == other.epilogue_pass ||
          (epilogue_pass && other.epilogue_pass && *epilogue_pass == *other.epilogue_pass)) &&
         (prologue_pass == other.prologue_pass ||
          (prologue_pass && other.prologue_pass && *prologue_pass == *other.prologue_pass));
}

}  // namespace tessera::mapper
