#include "traces/gpu_record.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace tessera::traces {

namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(SourceLocation{path.string(), 0, 0}, "",
                     std::string("not a readable GPU record: ") + error.what(),
                     "records are written by tessera_gpu_ref (scripts/gpu-reference.sh)");
  }
}

// The framework's time for the path that stores the runner's 16-bit or integer output like for like.
void add_framework(GpuRecord& record, const std::filesystem::path& torch_file) {
  if (!std::filesystem::exists(torch_file)) return;
  const nlohmann::json torch = read_json(torch_file);
  record.framework = torch.value("framework", "");
  for (const auto& row : torch.value("comparison", nlohmann::json::array())) {
    if (row.value("op", "") != record.name) continue;
    // Prefer the row of the reported path, else the first comparable one.
    if (!record.framework_us || row.value("runner_path", "") == record.path) {
      record.framework_us = row.value("framework_us", 0.0);
      record.framework_runner_us = row.value("runner_us", 0.0);
      record.framework_path = row.value("framework_path", "") + " (vs " + row.value("runner_path", "") + ")";
    }
  }
}

}  // namespace

std::vector<GpuRecord> find_gpu_records(const std::string& root, const std::string& workload,
                                        const std::string& op) {
  std::vector<GpuRecord> records;
  std::error_code ignored;
  if (!std::filesystem::is_directory(root, ignored)) return records;
  for (const auto& gpu_dir : std::filesystem::directory_iterator(root, ignored)) {
    const std::filesystem::path file = gpu_dir.path() / workload / (op + ".json");
    if (!std::filesystem::exists(file)) continue;
    const nlohmann::json json = read_json(file);
    GpuRecord record;
    record.file = file.string();
    const auto& op_json = json.at("op");
    record.kind = op_json.value("kind", "");
    record.name = op_json.value("name", "");
    if (json.contains("no_gpu_path")) {
      record.no_gpu_path = json.at("no_gpu_path").get<std::string>();
    } else {
      record.index = op_json.value("index", int64_t{0});
      record.m = op_json.value("m", int64_t{0});
      record.n = op_json.value("n", int64_t{0});
      record.k = op_json.value("k", int64_t{0});
      for (const auto& [key, value] : op_json.items())
        if (value.is_number_integer() && key != "index" && key != "seed")
          record.shape[key] = value.get<int64_t>();
      record.dtype = op_json.value("dtype", "");
      record.mode = op_json.value("mode", "");
      record.seed = op_json.value("seed", uint64_t{0});
      record.path = json.value("reported_path", "");
      record.time_us = json.value("time_us", 0.0);
      record.tflops = json.value("tflops", 0.0);
      record.roofline_floor_us = json.value("roofline_floor_us", 0.0);
      record.roofline_bound = json.value("roofline_bound", "");
      const auto& output = json.at("output");
      record.complete = output.value("complete", false);
      record.indices = output.at("indices").get<std::vector<int64_t>>();
      record.values = output.at("values").get<std::vector<double>>();
      record.self_check_pass = json.at("self_check").value("pass", false);
    }
    const std::filesystem::path run_file = gpu_dir.path() / workload / "run.json";
    if (std::filesystem::exists(run_file)) {
      const nlohmann::json run = read_json(run_file);
      record.gpu = run.at("gpu").value("name", "");
      record.driver = run.at("gpu").value("driver", "");
      record.cuda_runtime = run.at("gpu").value("cuda_runtime", "");
      record.date = run.value("date", "");
      record.command = run.value("command", "");
    }
    add_framework(record, gpu_dir.path() / workload / "torch.json");
    records.push_back(std::move(record));
  }
  std::sort(records.begin(), records.end(),
            [](const GpuRecord& a, const GpuRecord& b) { return a.file < b.file; });
  return records;
}

}  // namespace tessera::traces
