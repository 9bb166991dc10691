#include "cli/inputs.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
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

namespace {
namespace fs = std::filesystem;

// The folder of the running binary ("" if /proc cannot say).
fs::path binary_dir() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : self.parent_path();
}

bool holds_configs(const fs::path& root) {
  std::error_code error;
  return !root.empty() && fs::is_directory(root / "configs", error);
}
}  // namespace

std::string data_root() {
  if (const char* given = std::getenv("TESSERA_DATA"); given && *given && holds_configs(given)) return given;
  const fs::path bin = binary_dir();
  if (!bin.empty()) {
    const fs::path installed = (bin / ".." / "share" / "tessera").lexically_normal();
    if (holds_configs(installed)) return installed.string();
  }
  if (holds_configs(TESSERA_SOURCE_DIR)) return TESSERA_SOURCE_DIR;
  return "";
}

std::string default_arch_path() {
  const std::string root = data_root();
  return root.empty() ? "" : root + "/configs/arch/default.yaml";
}
std::string default_workload_path() {
  const std::string root = data_root();
  return root.empty() ? "" : root + "/configs/workloads/default.yaml";
}
std::string default_reference_root() {
  const std::string root = data_root();
  return root.empty() ? "" : root + "/traces/reference";
}
std::string default_runner_path() {
  // The build tree's place for it, else beside the binary (installed).
  const fs::path bin = binary_dir();
  std::error_code error;
  if (!bin.empty() && fs::exists(bin / "ops" / "cuda" / "tessera_gpu_ref", error))
    return (bin / "ops" / "cuda" / "tessera_gpu_ref").string();
  if (!bin.empty() && fs::exists(bin / "tessera_gpu_ref", error)) return (bin / "tessera_gpu_ref").string();
  return std::string(TESSERA_BINARY_DIR) + "/gpu/tessera_gpu_ref";
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

namespace {
// An empty path is a default that has no shipped file to name.
void check_given(const std::string& path, const char* option) {
  if (!path.empty()) return;
  throw InputError(
      SourceLocation{option, 0, 0}, "", "no file given, and no shipped configs found to default to",
      fmt::format("name one with {}, or set TESSERA_DATA to a folder holding configs/ (an installed "
                  "tessera has <prefix>/share/tessera)",
                  option));
}
}  // namespace

MachineInput load_machine(const std::string& path, const std::vector<std::string>& overrides) {
  check_given(path, "--arch");
  MachineInput input{config::load_file(path), {}};
  for (const std::string& assignment : overrides) config::apply_override(input.document, assignment);
  input.spec = arch::arch_from_yaml(input.document);
  return input;
}

WorkloadInput load_workload(const std::string& path, const std::vector<std::string>& overrides) {
  check_given(path, "--workload");
  WorkloadInput input{config::load_file(path), {}};
  for (const std::string& assignment : overrides) config::apply_override(input.document, assignment);
  input.workload = ops::workload_from_yaml(input.document);
  return input;
}

namespace {
config::Document copy_of(const config::Document& read) {
  config::Document copy;
  copy.root = YAML::Clone(read.root);
  copy.file = read.file;
  return copy;
}
}  // namespace

MachineInput machine_from(const config::Document& read, const std::vector<std::string>& overrides) {
  MachineInput input{copy_of(read), {}};
  for (const std::string& assignment : overrides) config::apply_override(input.document, assignment);
  input.spec = arch::arch_from_yaml(input.document);
  return input;
}

WorkloadInput workload_from(const config::Document& read, const std::vector<std::string>& overrides) {
  WorkloadInput input{copy_of(read), {}};
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

}  // namespace tessera::cli
