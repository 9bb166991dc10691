#include "cli/inputs.hpp"

#include <fmt/format.h>

#include <sstream>

#include "common/text.hpp"

namespace tessera::cli {

namespace {
const std::vector<std::string> kArchKeys = {"name", "clock_ghz", "mesh", "noc", "dram", "core", "energy_pj"};
const std::vector<std::string> kWorkloadKeys = {"name", "seed", "ops"};

bool contains(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}
}  // namespace

std::string default_arch_path() {
  return std::string(TESSERA_SOURCE_DIR) + "/configs/arch/default.yaml";
}
std::string default_workload_path() {
  return std::string(TESSERA_SOURCE_DIR) + "/configs/workloads/default.yaml";
}
std::string default_reference_root() {
  return std::string(TESSERA_SOURCE_DIR) + "/traces/reference";
}
std::string default_runner_path() {
  return std::string(TESSERA_BINARY_DIR) + "/ops/cuda/tessera_gpu_ref";
}

Overrides route_overrides(const std::vector<std::string>& assignments, bool has_workload) {
  Overrides routed;
  for (const std::string& assignment : assignments) {
    const SourceLocation where{"--set " + assignment, 0, 0};
    const std::string path = assignment.substr(0, assignment.find('='));
    const std::string first = path.substr(0, path.find('.'));
    if (first == "arch" || first == "workload") {
      if (path.size() == first.size())
        throw InputError(where, path, "name a field after '" + first + ".'",
                         "for example --set arch.core.sram.kib=256");
      std::string rest = assignment.substr(first.size() + 1);
      if (first == "workload" && !has_workload)
        throw InputError(where, path, "this command reads no workload", "drop the override");
      (first == "arch" ? routed.arch : routed.workload).push_back(rest);
      continue;
    }
    const bool in_arch = contains(kArchKeys, first);
    const bool in_workload = has_workload && contains(kWorkloadKeys, first);
    if (in_arch && in_workload) {
      throw InputError(where, path,
                       fmt::format("'{}' is a field of both the machine and the workload", first),
                       fmt::format("write arch.{} or workload.{}", path, path));
    }
    if (in_arch) {
      routed.arch.push_back(assignment);
    } else if (in_workload) {
      routed.workload.push_back(assignment);
    } else {
      std::vector<std::string> known = kArchKeys;
      if (has_workload) known.insert(known.end(), kWorkloadKeys.begin(), kWorkloadKeys.end());
      throw InputError(
          where, path,
          "no machine or workload field starts with '" + first + "'" + did_you_mean(first, known),
          "machine fields: " + join_alternatives(kArchKeys) +
              (has_workload ? "; workload fields: " + join_alternatives(kWorkloadKeys) : ""));
    }
  }
  return routed;
}

MachineInput load_machine(const std::string& path, const std::vector<std::string>& overrides) {
  MachineInput input{config::load_file(path), {}};
  for (const std::string& assignment : overrides) config::apply_override(input.document, assignment);
  input.spec = arch::arch_from_yaml(input.document);
  return input;
}

WorkloadInput load_workload(const std::string& path, const std::vector<std::string>& overrides) {
  WorkloadInput input{config::load_file(path), {}};
  for (const std::string& assignment : overrides) config::apply_override(input.document, assignment);
  input.workload = ops::workload_from_yaml(input.document);
  return input;
}

SourceLocation locate_field(const config::Document& document, const std::string& field_path) {
  YAML::Node node = document.root;
  SourceLocation found{document.file, 0, 0};
  std::stringstream splitter(field_path);
  for (std::string segment; std::getline(splitter, segment, '.');) {
    if (!node.IsMap() || !node[segment]) break;
    YAML::Node next = node[segment];
    node.reset(next);
    if (node.Mark().line >= 0)
      found = SourceLocation{document.file, node.Mark().line + 1, node.Mark().column + 1};
  }
  auto origin = document.overrides->origin_of_field.find(field_path);
  if (origin != document.overrides->origin_of_field.end()) return SourceLocation{origin->second, 0, 0};
  return found;
}

ops::Op op_from_binding(const arch::OpBinding& binding, const std::string& program_file, uint64_t* seed) {
  const SourceLocation where{program_file, 0, 0};
  auto integer = [&](const char* key) -> int64_t {
    auto found = binding.attributes.find(key);
    if (found == binding.attributes.end())
      throw InputError(
          where, "op", fmt::format("the op line has no {}=", key),
          "an op line names the op's workload entry (name, shape, dtype) and its index and seed");
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(found->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != found->second.size() || value < 0)
      throw InputError(where, "op", fmt::format("{}={} is not a non-negative integer", key, found->second));
    return value;
  };
  // The rest of the line is the op's workload entry: read it as one, with the workload's own checks.
  YAML::Node entry;
  entry["kind"] = binding.kind;
  for (const auto& [key, value] : binding.attributes)
    if (key != "index" && key != "seed") entry[key] = value;
  YAML::Node root;
  root["name"] = "program";
  root["seed"] = integer("seed");
  root["ops"].push_back(entry);
  config::Document document;
  document.root = root;
  document.file = program_file + " (op line)";
  ops::Op op = std::move(ops::workload_from_yaml(document).ops.front());
  op.index = static_cast<int>(integer("index"));
  *seed = static_cast<uint64_t>(integer("seed"));
  return op;
}

}  // namespace tessera::cli
