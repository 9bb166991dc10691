// A contraction stage as a mapped form (mapper/form.hpp): what the search, the cost model, the lowering and
// the reports ask of any form, answered by the shared machinery of a tiled contraction (mapper/search.cpp,
// cost_model.cpp, lowering.cpp).
#include <fmt/format.h>

#include "mapper/contraction/cost_model.hpp"
#include "mapper/contraction/lowering.hpp"
#include "mapper/contraction/search.hpp"
#include "mapper/contraction/stage.hpp"

namespace tessera::mapper {

const ContractionStage& stage_of(const Mapping& mapping) {
  const auto* stage = mapping.form_if<ContractionStage>();
  TESSERA_ASSERT(stage != nullptr, "a contraction's mapping is read as one");
  return *stage;
}

SearchResult ContractionStage::search(const std::shared_ptr<const Form>& self, const arch::ArchSpec& spec,
                                      const SearchOptions& options) const {
  auto stage = std::dynamic_pointer_cast<const ContractionStage>(self);
  TESSERA_ASSERT(stage.get() == this, "a form searches itself");
  return search_stage(stage, spec, options);
}

Cost ContractionStage::estimate(const Mapping& mapping, const arch::ArchSpec& spec) const {
  return CostModel(spec).evaluate(mapping);
}

arch::Program ContractionStage::lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                      const arch::ArchSpec& spec, const std::string& program_name) const {
  return lower_contraction(op, seed, mapping, spec, program_name);
}

std::string ContractionStage::describe(const Mapping& mapping) const {
  const Mapping& m = mapping;
  const char* buffering =
      m.double_buffer_inputs ? (m.double_buffer_output ? "io" : "i") : (m.double_buffer_output ? "o" : "-");
  std::string text = fmt::format("{}{} cores {}x{}x{} tile {}x{}x{} {} db={}{}", arch::name_of(m.dataflow),
                                 kind_suffix(), m.split_m, m.split_n, m.split_k, m.tile_m, m.tile_n, m.tile_k,
                                 m.order_name(), buffering, form_suffix());
  if (m.epilogue && m.fusion == Fusion::fused) text += " fused " + m.epilogue->text();
  if (m.epilogue && m.fusion == Fusion::array) text += " array " + m.epilogue->text();
  if (m.epilogue && m.fusion == Fusion::unfused)
    text +=
        " unfused " + m.epilogue->text() + (m.epilogue_pass ? ", then " + m.epilogue_pass->describe() : "");
  return text;
}

NamedValues ContractionStage::fields(const Mapping& mapping, const Cost& cost) const {
  const Mapping& m = mapping;
  return {{"form", std::string("contraction")},
          {"stage", std::string(kind())},  // gemm, direct_conv
          {"cores.m", int64_t{m.split_m}},
          {"cores.n", int64_t{m.split_n}},
          {"cores.k", int64_t{m.split_k}},
          {"tile.m", m.tile_m},
          {"tile.n", m.tile_n},
          {"tile.k", m.tile_k},
          {"loop_order", m.order_name()},
          {"double_buffer.inputs", m.double_buffer_inputs},
          {"double_buffer.output", m.double_buffer_output},
          {"multicast.A", cost.multicast_a},
          {"multicast.W", cost.multicast_w},
          {"edge_waste", cost.edge_waste}};
}

bool ContractionStage::same_form(const Form& other) const {
  const auto* stage = dynamic_cast<const ContractionStage*>(&other);
  return stage != nullptr && (stage == this || same_stage(*stage));
}

}  // namespace tessera::mapper
