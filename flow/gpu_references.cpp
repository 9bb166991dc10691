#include "flow/gpu_references.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "flow/numerics.hpp"
#include "ops/epilogue.hpp"

namespace tessera::flow {

GpuReferences find_gpu_references(const ops::Op& op, uint64_t seed, const std::string& workload,
                                  const std::string& root, bool outputs) {
  GpuReferences found;
  // The op's integer fields (m, n, k; batch, inputs, outputs; a conv's n, c, h, ...) and its mode (a pool's),
  // as a record names them.
  const ops::OpIdentity identity = ops::identity_of(op);
  std::vector<std::pair<std::string, int64_t>> shape;
  std::string mode;
  std::vector<std::pair<std::string, std::string>> others;  // every other field as text: eps, epilogue, ...
  std::set<std::string> defaults;  // fields at their default: a record without the field computed it
  for (const ops::FieldValue& field : identity.fields) {
    // An activation's density describes its zeros to a machine that codes its DRAM traffic; the values, and
    // so the GPU's work on them, are the generator's whatever it says (ops/density.hpp).
    if (field.name.rfind("density.", 0) == 0) continue;
    if (field.is_integer())
      shape.emplace_back(field.name, field.number);
    else if (field.name == "mode")
      mode = field.choice;
    else
      others.emplace_back(field.name, field.text());
    if (field.is_default) defaults.insert(field.name);
  }
  auto shape_text = [](const std::vector<std::pair<std::string, int64_t>>& fields) {
    std::string text;
    for (const auto& [key, value] : fields)
      text += fmt::format("{}{}={}", text.empty() ? "" : " ", key, value);
    return text;
  };
  for (const traces::GpuRecord& record : traces::find_gpu_records(root, workload, op.name, outputs)) {
    traces::GpuComparison comparison;
    comparison.gpu = record.gpu;
    comparison.date = record.date;
    // Named under the reference folder, so that the same run gives the same report in any checkout.
    comparison.file = record.relative_file;
    if (!record.no_gpu_path.empty()) {
      comparison.note = record.no_gpu_path;
      found.comparisons.push_back(comparison);
      continue;
    }
    comparison.path = record.path;
    comparison.time_us = record.time_us;
    comparison.tflops = record.tflops;
    comparison.roofline_floor_us = record.roofline_floor_us;
    comparison.roofline_bound = record.roofline_bound;
    comparison.framework = record.framework;
    comparison.framework_path = record.framework_path;
    comparison.framework_us = record.framework_us.value_or(0);
    comparison.framework_runner_us = record.framework_runner_us;
    comparison.eager_us = record.eager_us;
    comparison.fewest_bytes = record.fewest_bytes;
    comparison.peak_tflops = record.peak_tflops;
    comparison.bandwidth_gbps = record.bandwidth_gbps;
    comparison.framework_variant = record.framework_variant;
    comparison.framework_eager_us = record.framework_eager_us;
    comparison.ratio = record.ratio;
    comparison.ratio_min = record.ratio_min;
    comparison.ratio_max = record.ratio_max;
    comparison.rounds = record.rounds;
    if (record.profile) {
      comparison.profiled = true;
      comparison.gpu_dram_bytes = record.profile->dram_bytes_read + record.profile->dram_bytes_written;
      comparison.tensor_pipe_pct = record.profile->tensor_pipe_pct;
      comparison.sm_throughput_pct = record.profile->sm_throughput_pct;
      comparison.achieved_occupancy_pct = record.profile->achieved_occupancy_pct;
      comparison.kernels = record.profile->kernels;
      comparison.top_stalls = record.profile->top_stalls;
    }
    // Never compare mismatched things: the record must be of this very op, inputs included.
    bool same_shape = true;
    for (const auto& [key, value] : shape) {
      const auto recorded = record.shape.find(key);
      if (recorded == record.shape.end() && defaults.count(key)) continue;  // made before the field existed
      same_shape = same_shape && recorded != record.shape.end() && recorded->second == value;
    }
    // A record of the bare contraction (made before the op had its epilogue) times the contraction alone.
    bool contraction_only = false;
    std::string epilogue, differing;
    // A number the runner wrote without a fraction (scale 0) reads back as an integer: compared as text too.
    std::map<std::string, std::string> recorded_texts = record.texts;
    for (const auto& [key, value] : record.shape)
      recorded_texts.emplace(key, fmt::format("{}", static_cast<double>(value)));
    for (const auto& [key, text] : others) {
      const auto recorded = recorded_texts.find(key);
      if (key == "epilogue" && recorded == recorded_texts.end()) {
        contraction_only = true, epilogue = text;
        continue;
      }
      if (recorded == recorded_texts.end() && defaults.count(key)) continue;  // made before the field existed
      if (recorded != recorded_texts.end() && recorded->second == text) continue;
      same_shape = false;
      differing += fmt::format("; {} {} in the record, {} here", key,
                               recorded == recorded_texts.end() ? "(none)" : recorded->second, text);
    }
    const bool same = record.kind == op.kind_name() && same_shape && record.mode == mode &&
                      record.dtype == name_of(op.dtype) && record.seed == seed && record.index == op.index;
    comparison.compared = same;
    if (!same) {
      // The record's fields in this op's order when it is of the same kind, else all of them.
      std::vector<std::pair<std::string, int64_t>> recorded;
      if (record.kind == op.kind_name()) {
        for (const auto& [key, value] : shape)
          if (record.shape.count(key)) recorded.emplace_back(key, record.shape.at(key));
      } else {
        recorded.assign(record.shape.begin(), record.shape.end());
      }
      comparison.note =
          fmt::format(
              "the record was made for {}{} {} {} (op #{}, seed {}); this op is {}{} {} {} (op "
              "#{}, seed {})",
              record.kind, record.mode.empty() ? "" : " " + record.mode, shape_text(recorded), record.dtype,
              record.index, record.seed, op.kind_name(), mode.empty() ? "" : " " + mode, shape_text(shape),
              name_of(op.dtype), op.index, seed) +
          differing;
    } else if (contraction_only) {
      // Its output lacks the epilogue: no output check against it, and its time is said to be the
      // contraction's.
      comparison.contraction_only = true;
      comparison.note = fmt::format(
          "recorded without the epilogue ({}): the GPU time is the contraction's alone", epilogue);
    } else {
      found.matched.push_back(record);
    }
    found.comparisons.push_back(comparison);
  }
  if (found.comparisons.empty())
    found.note = fmt::format("no recorded reference ({}/<gpu>/{}/{}.json)", root, workload, op.name);
  return found;
}

traces::Numerics check_against_gpu(const ops::Op& op, const traces::GpuRecord& record,
                                   const sim::RunResult& result, int output_tensor) {
  const ops::HostTensor& output = result.outputs.at(output_tensor);
  const DType checked = ops::numerics_dtype(op.dtype, output.dtype);
  return numerics_record(
      ops::compare_at(output, record.indices, record.values, checked,
                      "gpu-recorded " + record.gpu + (record.complete ? "" : " (sampled)")),
      checked);
}

}  // namespace tessera::flow
