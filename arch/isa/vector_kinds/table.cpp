#include "arch/isa/vector_kinds/vector_kind_info.hpp"
#include "common/error.hpp"

namespace tessera::arch {

namespace {

// A kind's descriptor with the kind and mnemonic of its line of the table.
VectorKindInfo named(VectorKindInfo info, VectorKind kind, const char* mnemonic) {
  info.kind = kind;
  info.mnemonic = mnemonic;
  return info;
}

std::array<VectorKindInfo, kVectorKindCount> described_kinds() {
  std::array<VectorKindInfo, kVectorKindCount> kinds = {
#define TESSERA_VECTOR_KIND_INFO(name) named(name##_kind_info(), VectorKind::name, #name),
      TESSERA_VECTOR_KINDS(TESSERA_VECTOR_KIND_INFO)
#undef TESSERA_VECTOR_KIND_INFO
  };
  for (const VectorKindInfo& info : kinds)
    TESSERA_ASSERT(info.add_passes != nullptr, "every vector kind has passes");
  return kinds;
}

}  // namespace

VectorKindInfo tile_kind(VecOptionSet required, VecOptionSet optional, const char* syntax,
                         bool shares_tile_syntax) {
  VectorKindInfo info;
  info.required = kTileOptions | required;
  info.optional = kStorageOptions | optional;
  info.syntax = syntax;
  info.shares_tile_syntax = shares_tile_syntax;
  return info;
}

VectorKindInfo own_instruction_kind() {
  VectorKindInfo info;
  info.is_vec_op = false;
  return info;
}

VectorKindInfo with_rules(VectorKindInfo info, void (*add_passes)(const VectorWork&, VectorPasses&),
                          std::string (*work_problem)(const VectorWork&),
                          void (*check)(const VecOp&, const InstructionChecks&)) {
  info.add_passes = add_passes;
  info.work_problem = work_problem;
  info.check = check;
  return info;
}

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
