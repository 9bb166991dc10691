#include "common/dtype.hpp"

namespace tessera {

const char* name_of(DType type) {
  switch (type) {
    case DType::fp32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::int8:
      return "int8";
    case DType::int32:
      return "int32";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& text) {
  for (DType type : {DType::fp32, DType::bf16, DType::fp16, DType::int8, DType::int32})
    if (text == name_of(type)) return type;
  return std::nullopt;
}

const std::vector<std::string>& operand_dtype_names() {
  static const std::vector<std::string> names = {"fp32", "bf16", "fp16", "int8"};
  return names;
}

}  // namespace tessera
