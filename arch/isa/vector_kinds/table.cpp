#include "arch/isa/vector_kinds/vector_kind_info.hpp"
#include "common/error.hpp"

namespace tessera::arch {

namespace {

std::array<VectorKindInfo, kVectorKindCount> described_kinds() {
  std::array<VectorKindInfo, kVectorKindCount> kinds = {
#define TESSERA_VECTOR_KIND_INFO(name) name##_kind_info(),
      TESSERA_VECTOR_KINDS(TESSERA_VECTOR_KIND_INFO)
#undef TESSERA_VECTOR_KIND_INFO
  };
  for (size_t index = 0; index < kinds.size(); ++index) {
    TESSERA_ASSERT(static_cast<size_t>(kinds[index].kind) == index,
                   "each vector kind's descriptor names the kind of its line in vector_kind_list.hpp");
    TESSERA_ASSERT(kinds[index].add_passes != nullptr, "every vector kind has passes");
  }
  return kinds;
}

}  // namespace

const std::array<VectorKindInfo, kVectorKindCount>& vector_kinds() {
  static const std::array<VectorKindInfo, kVectorKindCount> kinds = described_kinds();
  return kinds;
}

const VectorKindInfo& info_of(VectorKind kind) {
  return vector_kinds()[static_cast<size_t>(kind)];
}

const std::vector<std::string>& vec_option_names() {
  static const std::vector<std::string> names = {
      "x",       "y",       "g",       "b",  "o",     "rows",         "cols",    "dtype",
      "x_pitch", "y_pitch", "o_pitch", "fn", "scale", "causal_shift", "eps",     "ih",
      "iw",      "e",       "q",       "r",  "s",     "stride",       "pad_top", "pad_left",
      "mode",    "out",     "first",   "by", "parts"};
  return names;
}

}  // namespace tessera::arch
