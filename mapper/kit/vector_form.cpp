// A vector stage as a mapped form (mapper/form.hpp): its search and estimate are
// mapper/kit/vector_stage.cpp's, its lowering mapper/kit/vector_lowering.cpp's; here what the reports ask of
// it.
#include <fmt/format.h>

#include "mapper/kit/vector_stage.hpp"

namespace tessera::mapper {

const VectorStage& vector_stage_of(const Mapping& mapping) {
  const auto* stage = mapping.form_if<VectorStage>();
  TESSERA_ASSERT(stage != nullptr, "a vector stage's mapping is read as one");
  return *stage;
}

SearchResult VectorStage::search(const std::shared_ptr<const Form>& self, const arch::ArchSpec& spec,
                                 const SearchOptions& options) const {
  auto stage = std::dynamic_pointer_cast<const VectorStage>(self);
  TESSERA_ASSERT(stage.get() == this, "a form searches itself");
  return search_vector(stage, spec, options);
}

Cost VectorStage::estimate(const Mapping& mapping, const arch::ArchSpec& spec) const {
  return evaluate_vector(mapping, spec);
}

arch::Program VectorStage::lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                 const arch::ArchSpec& spec, const std::string& program_name) const {
  return lower_vector(op, seed, mapping, spec, program_name);
}

std::string VectorStage::describe(const Mapping& mapping) const {
  const Mapping& m = mapping;
  std::string text = fmt::format("vec cores {} rows {} per core, blocks of {} db={}", m.split_m, m.tile_n,
                                 m.tile_m, m.double_buffer_inputs ? "io" : "-");
  if (m.fusion == Fusion::fused) text += " fused x+residual";
  if (m.prologue_pass) text = "x+residual: " + m.prologue_pass->describe() + "; then " + text;
  return text;
}

NamedValues VectorStage::fields(const Mapping& mapping, const Cost&) const {
  const Mapping& m = mapping;
  NamedValues values = {{"form", std::string("vector")},
                        {"cores", int64_t{m.split_m}},
                        {"rows_per_core", m.tile_n},
                        {"block_rows", m.tile_m},
                        {"double_buffer", m.double_buffer_inputs}};
  if (m.fusion == Fusion::fused || m.prologue_pass)
    values.push_back({"residual", std::string(m.prologue_pass ? "unfused" : "fused")});
  return values;
}

}  // namespace tessera::mapper
