#include "traces/gpu_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/text.hpp"

namespace tessera::traces {

namespace {

// Whether `path` lies inside `folder` (both canonical).
bool is_inside(const std::filesystem::path& path, const std::filesystem::path& folder) {
  if (path.empty() || folder.empty()) return false;
  auto part = path.begin();
  for (auto folder_part = folder.begin(); folder_part != folder.end(); ++folder_part, ++part)
    if (part == path.end() || *part != *folder_part) return false;
  return part != path.end();
}

// Without `outputs`, a record's sampled output (output.indices and output.values, thousands of numbers: most
// of a record's bytes) is read past, not kept: a timing-only run compares no outputs.
nlohmann::json read_json(const std::filesystem::path& path, bool outputs = true) {
  std::ifstream in(path);
  try {
    if (!outputs) {
      bool in_output = false;
      return nlohmann::json::parse(
          in, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
            if (event == nlohmann::json::parse_event_t::key && depth == 1) in_output = parsed == "output";
            if (event == nlohmann::json::parse_event_t::key && depth == 2 && in_output)
              return !(parsed == "indices" || parsed == "values");
            return true;
          });
    }
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(SourceLocation{path.string(), 0, 0}, "",
                     std::string("not a readable GPU record: ") + error.what(),
                     "records are written by tessera_gpu_ref (scripts/gpu-reference.sh)");
  }
}

// A workload's shared files (run.json, and torch.json: hundreds of KB) read once per process rather than once
// per op: kept with the file's size and modification time, and read again when either changes.
std::shared_ptr<const nlohmann::json> shared_json(const std::filesystem::path& path) {
  struct Kept {
    std::uintmax_t size = 0;
    std::filesystem::file_time_type modified;
    std::shared_ptr<const nlohmann::json> json;
  };
  static std::mutex mutex;
  static std::map<std::string, Kept> kept;
  const std::uintmax_t size = std::filesystem::file_size(path);
  const std::filesystem::file_time_type modified = std::filesystem::last_write_time(path);
  const std::lock_guard<std::mutex> lock(mutex);
  Kept& entry = kept[path.string()];
  if (!entry.json || entry.size != size || entry.modified != modified)
    entry = Kept{size, modified, std::make_shared<const nlohmann::json>(read_json(path))};
  return entry.json;  // held by the caller: another thread may replace the entry meanwhile
}

// The framework's comparison row where the runner does best (the lowest A/B ratio over the output classes).
void add_framework(GpuRecord& record, const std::filesystem::path& torch_file) {
  if (!std::filesystem::exists(torch_file)) return;
  const std::shared_ptr<const nlohmann::json> kept = shared_json(torch_file);
  const nlohmann::json& torch = *kept;
  record.framework = torch.value("framework", "");
  for (const auto& row : torch.value("comparison", nlohmann::json::array())) {
    if (row.value("op", "") != record.name) continue;
    const double ratio = row.value("runner_over_framework", 0.0);
    if (record.framework_us && ratio >= record.ratio) continue;
    record.framework_us = row.value("framework_us", 0.0);
    record.framework_runner_us = row.value("runner_us", 0.0);
    record.framework_path = row.value("framework_path", "") + " (vs " + row.value("runner_path", "") + ")";
    record.framework_variant = row.value("framework_variant", "");
    record.framework_eager_us = row.value("framework_eager_us", 0.0);
    record.runner_eager_us = row.value("runner_eager_us", 0.0);
    record.ratio = ratio;
    record.ratio_min = row.value("ratio_min", 0.0);
    record.ratio_max = row.value("ratio_max", 0.0);
    record.rounds = row.value("rounds", 0);
  }
}

void add_paths(GpuRecord& record, const nlohmann::json& json) {
  for (const auto& path : json.value("paths", nlohmann::json::array())) {
    if (!path.value("ran", false)) continue;
    ++record.paths_ran;
    const bool passed = path.contains("check") && path.at("check").value("pass", false);
    record.paths_checked += passed ? 1 : 0;
    if (path.value("path", "") != record.path) continue;
    record.reported_path_checked = passed;
    if (!path.contains("profile")) continue;
    const auto& profile = path.at("profile");
    const auto& totals = profile.at("totals");
    GpuRecord::Profile read;
    read.duration_us = totals.value("duration_us", 0.0);
    read.dram_bytes_read = totals.value("dram_bytes_read", 0.0);
    read.dram_bytes_written = totals.value("dram_bytes_written", 0.0);
    read.tensor_pipe_pct = totals.value("tensor_pipe_pct", 0.0);
    read.sm_throughput_pct = totals.value("sm_throughput_pct", 0.0);
    read.achieved_occupancy_pct = totals.value("achieved_occupancy_pct", 0.0);
    double longest = -1;
    for (const auto& kernel : profile.value("kernels", nlohmann::json::array())) {
      read.kernels.push_back(kernel.value("name", ""));
      if (kernel.value("duration_us", 0.0) <= longest) continue;
      longest = kernel.value("duration_us", 0.0);
      read.top_stalls.clear();
      for (const auto& stall : kernel.value("top_stalls", nlohmann::json::array()))
        read.top_stalls.emplace_back(stall.at(0).get<std::string>(), stall.at(1).get<double>());
    }
    record.profile = read;
  }
}

}  // namespace

std::vector<GpuRecord> find_gpu_records(const std::string& root, const std::string& workload,
                                        const std::string& op, bool outputs) {
  std::vector<GpuRecord> records;
  std::error_code ignored;
  if (!std::filesystem::is_directory(root, ignored)) return records;
  // The names were checked where they were read (common/text.hpp, path_name_problem); a caller that did not
  // check them finds nothing rather than a file elsewhere.
  if (!path_name_problem(workload).empty() || !path_name_problem(op).empty()) return records;
  const std::filesystem::path records_folder = std::filesystem::canonical(root, ignored);
  for (const auto& gpu_dir : std::filesystem::directory_iterator(root, ignored)) {
    const std::filesystem::path file = gpu_dir.path() / workload / (op + ".json");
    if (!std::filesystem::is_regular_file(file, ignored)) continue;
    // Only a record inside the records folder is read, wherever a link in it points.
    if (!is_inside(std::filesystem::canonical(file, ignored), records_folder)) continue;
    const nlohmann::json json = read_json(file, outputs);
    GpuRecord record;
    record.file = file.string();
    record.relative_file = (gpu_dir.path().filename() / workload / (op + ".json")).generic_string();
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
      for (const auto& [key, value] : op_json.items()) {
        if (key == "index" || key == "seed" || key == "kind" || key == "name" || key == "dtype") continue;
        if (value.is_number_integer())
          record.shape[key] = value.get<int64_t>();
        else if (value.is_number())
          record.texts[key] = fmt::format("{}", value.get<double>());
        else if (value.is_string())
          record.texts[key] = value.get<std::string>();
      }
      record.dtype = op_json.value("dtype", "");
      record.mode = op_json.value("mode", "");
      record.seed = op_json.value("seed", uint64_t{0});
      record.path = json.value("reported_path", "");
      record.time_us = json.value("time_us", 0.0);
      record.eager_us = json.value("eager_us", 0.0);
      record.fewest_bytes = json.value("gbps", 0.0) * 1e3 * record.time_us;
      record.tflops = json.value("tflops", 0.0);
      record.roofline_floor_us = json.value("roofline_floor_us", 0.0);
      record.roofline_bound = json.value("roofline_bound", "");
      const auto& output = json.at("output");
      record.complete = output.value("complete", false);
      if (outputs) {
        record.indices = output.at("indices").get<std::vector<int64_t>>();
        record.values = output.at("values").get<std::vector<double>>();
      }
      record.self_check_pass = json.at("self_check").value("pass", false);
      add_paths(record, json);
    }
    const std::filesystem::path run_file = gpu_dir.path() / workload / "run.json";
    if (std::filesystem::exists(run_file)) {
      const std::shared_ptr<const nlohmann::json> kept = shared_json(run_file);
      const nlohmann::json& run = *kept;
      record.gpu = run.at("gpu").value("name", "");
      record.driver = run.at("gpu").value("driver", "");
      record.cuda_runtime = run.at("gpu").value("cuda_runtime", "");
      record.date = run.value("date", "");
      record.command = run.value("command", "");
      if (run.contains("ceilings") && !record.dtype.empty()) {
        const auto& ceilings = run.at("ceilings");
        const auto rates = ceilings.value("matmul_tflops_for_floors", nlohmann::json::object());
        if (rates.contains(record.dtype)) record.peak_tflops = rates.at(record.dtype).value("tflops", 0.0);
        record.bandwidth_gbps = ceilings.contains("gbps_for_floors")
                                    ? ceilings.at("gbps_for_floors").value("gbps", 0.0)
                                    : ceilings.value("copy_gbps", 0.0);
      }
    }
    add_framework(record, gpu_dir.path() / workload / "torch.json");
    records.push_back(std::move(record));
  }
  std::sort(records.begin(), records.end(),
            [](const GpuRecord& a, const GpuRecord& b) { return a.file < b.file; });
  return records;
}

}  // namespace tessera::traces
