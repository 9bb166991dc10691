#include "e2e/cli_helpers.hpp"

#include "e2e/run_tessera.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessera {

ScratchDir::ScratchDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tessera-test-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

std::string shipped(const std::string& relative) {
  return std::string(TESSERA_SOURCE_DIR) + "/configs/" + relative;
}

nlohmann::json without_host_seconds(nlohmann::json json) {
  if (json.is_object()) {
    json.erase("host_seconds");
    for (auto& [key, value] : json.items()) value = without_host_seconds(value);
  } else if (json.is_array()) {
    for (auto& value : json) value = without_host_seconds(value);
  }
  return json;
}

// The mesh4x4 machine with its vector unit replaced.
std::string mesh4x4_with_vector(const std::string& vector) {
  std::string text = read_text(shipped("arch/mesh4x4.yaml"));
  const std::string from = "vector: {lanes: 32, special_per_cycle: 8, latency_cycles: 8}";
  const size_t at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("mesh4x4.yaml no longer has: " + from);
  return text.replace(at, from.size(), vector);
}

// Runs one op on a machine through the command, timing only; returns report.json.
nlohmann::json run_report(const std::string& machine, const std::string& op_line) {
  ScratchDir scratch;
  write_text(scratch.file("machine.yaml"), machine);
  write_text(scratch.file("w.yaml"), "name: fusion\nseed: 2\nops:\n  - " + op_line + "\n");
  const CommandResult result =
      run_tessera({"run", "--arch", scratch.file("machine.yaml"), "--workload", scratch.file("w.yaml"),
                   "--out", scratch.file("out"), "--quiet", "--timing-only"});
  if (result.exit_code != 0) throw std::runtime_error("tessera run failed: " + result.output);
  return nlohmann::json::parse(read_text(scratch.file("out/report.json")));
}

// The share of the PE arrays' time (all cores) spent on `cause` in a run of report.json.
double pe_share(const nlohmann::json& run, const std::string& cause) {
  double cause_cycles = 0, all = 0;
  for (const auto& [unit, causes] : run.at("bubbles").items()) {
    if (unit.size() < 3 || unit.substr(unit.size() - 3) != ".pe") continue;
    for (const auto& [name, cycles] : causes.items()) {
      all += cycles.get<double>();
      if (name == cause) cause_cycles += cycles.get<double>();
    }
  }
  return all > 0 ? cause_cycles / all : 0;
}

}  // namespace tessera
