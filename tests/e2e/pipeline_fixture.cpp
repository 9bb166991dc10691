#include "e2e/pipeline_fixture.hpp"

#include <fmt/format.h>

#include "common/config.hpp"
#include "mapper/contraction/conv2d_forms.hpp"
#include "mapper/contraction/search.hpp"
#include "ops/epilogue.hpp"
#include "ops/numerics.hpp"
#include "ops/reference.hpp"
#include "ops/workload.hpp"

namespace tessera {

arch::ArchSpec load_arch(const std::string& name) {
  return arch::arch_from_yaml(
      config::load_file(std::string(TESSERA_SOURCE_DIR) + "/configs/arch/" + name + ".yaml"));
}

ops::Op conv_op(const ops::ConvShape& shape, DType dtype) {
  return ops::make_op("conv", dtype, shape);
}

ops::Op gemm_op(int64_t m, int64_t n, int64_t k, DType dtype) {
  return ops::make_op("test", dtype, ops::GemmShape{m, n, k});
}

ops::Op without_epilogue(const ops::Op& op) {
  YAML::Node entry;
  for (const auto& [key, value] : ops::entry_of(op)) {
    if (key == "epilogue") continue;
    const size_t dot = key.find('.');  // a group's field (kv_cache.layout) nests under the group
    if (dot == std::string::npos)
      entry[key] = value;
    else
      entry[key.substr(0, dot)][key.substr(dot + 1)] = value;
  }
  YAML::Node root;
  root["name"] = "bare";
  root["seed"] = 1;  // the op's inputs are generated with the seed its caller gives
  root["ops"].push_back(entry);
  config::Document document;
  document.root = root;
  document.file = "bare";
  ops::Op bare = std::move(ops::workload_from_yaml(document).ops.front());
  bare.index = op.index;
  return bare;
}

mapper::Mapping best_mapping(const ops::Op& op, const arch::ArchSpec& spec, arch::Dataflow dataflow) {
  mapper::SearchOptions options;
  options.dataflows = {dataflow};
  options.keep_per_dataflow = 1;
  options.op_description = "test";
  return mapper::search_op(op, spec, options).per_dataflow.front().best.front().mapping;
}

mapper::Mapping best_stage_mapping(const std::shared_ptr<const mapper::ContractionStage>& stage,
                                   const arch::ArchSpec& spec, arch::Dataflow dataflow) {
  mapper::SearchOptions options;
  options.dataflows = {dataflow};
  options.keep_per_dataflow = 1;
  options.op_description = "test";
  return mapper::search_stage(stage, spec, options).per_dataflow.front().best.front().mapping;
}

mapper::Mapping best_direct_mapping(const ops::Op& op, const arch::ArchSpec& spec, arch::Dataflow dataflow,
                                    int64_t images) {
  return best_stage_mapping(mapper::conv_direct_stage(*op.as<ops::ConvShape>(), op.dtype, images), spec,
                            dataflow);
}

bool output_matches_reference(const ops::Op& op, uint64_t seed, const sim::RunResult& result,
                              std::string* detail) {
  const auto inputs = ops::generate_inputs(op, seed);
  const auto expected = ops::reference_output(op, inputs, 2);
  TESSERA_ASSERT(!result.outputs.empty(), "a lowered op has an output tensor");
  // O is declared last (an unfused epilogue's program stores the raw Z before it).
  const auto& output = result.outputs.rbegin()->second;
  const auto numerics =
      ops::compare_output(output, expected, ops::numerics_dtype(op.dtype, output.dtype), "cpu");
  if (detail)
    *detail = fmt::format("max_abs_err={} rel_l2_err={} mismatched={}", numerics.max_abs_err,
                          numerics.rel_l2_err, numerics.mismatched_elements);
  return numerics.pass;
}

}  // namespace tessera
