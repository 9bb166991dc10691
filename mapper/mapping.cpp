#include "mapper/mapping.hpp"

#include <fmt/format.h>

#include "mapper/cost_model.hpp"
#include "mapper/stage.hpp"
#include "mapper/stage_graph.hpp"

namespace tessera::mapper {

std::string Mapping::order_name() const {
  return std::string(name_of(order[0])) + name_of(order[1]) + name_of(order[2]);
}

std::string Mapping::label() const {
  if (graph) return graph->label(*this);
  if (vector_stage) return "vec";
  return stage ? stage->label(dataflow) : arch::name_of(dataflow);
}

std::string Mapping::describe() const {
  if (graph) return graph->describe(*this);
  if (vector_stage) {
    std::string text = fmt::format("vec cores {} rows {} per core, blocks of {} db={}", split_m, tile_n,
                                   tile_m, double_buffer_inputs ? "io" : "-");
    if (fusion == Fusion::fused) text += " fused x+residual";
    if (prologue_pass) text = "x+residual: " + prologue_pass->describe() + "; then " + text;
    return text;
  }
  const char* buffering =
      double_buffer_inputs ? (double_buffer_output ? "io" : "i") : (double_buffer_output ? "o" : "-");
  std::string text = fmt::format("{}{} cores {}x{}x{} tile {}x{}x{} {} db={}{}", arch::name_of(dataflow),
                                 stage ? stage->kind_suffix() : "", split_m, split_n, split_k, tile_m, tile_n,
                                 tile_k, order_name(), buffering, stage ? stage->form_suffix() : "");
  if (epilogue && fusion == Fusion::fused) text += " fused " + epilogue->text();
  if (epilogue && fusion == Fusion::array) text += " array " + epilogue->text();
  if (epilogue && fusion == Fusion::unfused)
    text += " unfused " + epilogue->text() + (epilogue_pass ? ", then " + epilogue_pass->describe() : "");
  return text;
}

NamedValues Mapping::fields(const Cost& cost) const {
  if (graph) return graph->fields(*this);
  if (vector_stage) {
    NamedValues values = {{"form", std::string("vector")},
                          {"cores", int64_t{split_m}},
                          {"rows_per_core", tile_n},
                          {"block_rows", tile_m},
                          {"double_buffer", double_buffer_inputs}};
    if (fusion == Fusion::fused || prologue_pass)
      values.push_back({"residual", std::string(prologue_pass ? "unfused" : "fused")});
    return values;
  }
  NamedValues values = {{"form", std::string("contraction")}};
  if (stage) values.push_back({"stage", std::string(stage->kind())});  // gemm, direct_conv
  NamedValues choices = {{"cores.m", int64_t{split_m}},
                         {"cores.n", int64_t{split_n}},
                         {"cores.k", int64_t{split_k}},
                         {"tile.m", tile_m},
                         {"tile.n", tile_n},
                         {"tile.k", tile_k},
                         {"loop_order", order_name()},
                         {"double_buffer.inputs", double_buffer_inputs},
                         {"double_buffer.output", double_buffer_output},
                         {"multicast.A", cost.multicast_a},
                         {"multicast.W", cost.multicast_w},
                         {"edge_waste", cost.edge_waste}};
  values.insert(values.end(), choices.begin(), choices.end());
  return values;
}

bool Mapping::operator==(const Mapping& other) const {
  const bool same_stage = stage == other.stage || (stage && other.stage && stage->same_form(*other.stage));
  return same_stage && vector_stage == other.vector_stage && graph == other.graph && choice == other.choice &&
         dataflow == other.dataflow && split_m == other.split_m && split_n == other.split_n &&
         split_k == other.split_k && tile_m == other.tile_m && tile_n == other.tile_n &&
         tile_k == other.tile_k && order == other.order &&
         double_buffer_inputs == other.double_buffer_inputs &&
         double_buffer_output == other.double_buffer_output && fusion == other.fusion &&
         (epilogue_pass == other.epilogue_pass ||
          (epilogue_pass && other.epilogue_pass && *epilogue_pass == *other.epilogue_pass)) &&
         (prologue_pass == other.prologue_pass ||
          (prologue_pass && other.prologue_pass && *prologue_pass == *other.prologue_pass));
}

}  // namespace tessera::mapper
