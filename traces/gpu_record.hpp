// Recorded GPU reference runs (traces/reference/<gpu>/<workload>/: <op>.json per op, run.json, torch.json),
// as gpu/'s tessera_gpu_ref and scripts/gpu_torch_reference.py wrote them. Read here so that a report can
// show the GPU's time and compare the simulated output with the GPU's; CI has no GPU and uses these.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::traces {

struct GpuRecord {
  std::string file;           // the path it was read from (for messages)
  std::string relative_file;  // under the reference folder: "nvidia-h200/gemm-256/gemm256.json"
  // How it was made.
  std::string gpu, driver, cuda_runtime, date, command;
  // What was run.
  std::string kind, name, dtype;
  std::string mode;  // a pool's "max" or "avg" ("" for the others)
  int64_t index = 0, m = 0, n = 0, k = 0;
  std::map<std::string, int64_t> shape;  // every integer field of the op but index and seed (m, n, k; conv's)
  // Every other field but kind, name and dtype, as text (a number the shortest text that reads back as it).
  std::map<std::string, std::string> texts;
  uint64_t seed = 0;
  // What it measured.
  std::string path;     // the path that computes tessera's output type (its numerics are recorded)
  double time_us = 0;   // device time per launch (CUDA-graph replay)
  double eager_us = 0;  // launches issued back to back: what a caller of one op at a time sees
  double tflops = 0, roofline_floor_us = 0;
  std::string roofline_bound;
  double fewest_bytes = 0;  // inputs once, tessera's output once (the floor's bytes)
  // The roofs of the floor (run.json): the best matrix rate of the op's type and bandwidth seen in the run.
  double peak_tflops = 0, bandwidth_gbps = 0;
  int paths_ran = 0, paths_checked = 0;  // every path that ran has its output checked; these passed
  bool reported_path_checked = false;
  // The framework's best variant of the output class where the runner does best (torch.json's comparison),
  // by device time, from A/B rounds of the two interleaved.
  std::optional<double> framework_us;
  double framework_runner_us = 0;  // ... and the runner's path it is like for like with
  std::string framework_path, framework, framework_variant;
  double framework_eager_us = 0, runner_eager_us = 0;
  double ratio = 0, ratio_min = 0, ratio_max = 0;  // runner/framework over the rounds: median, range
  int rounds = 0;
  // Nsight Compute's counters of the reported path (scripts/gpu_profile.py), where ncu was present.
  struct Profile {
    std::vector<std::string> kernels;
    double duration_us = 0, dram_bytes_read = 0, dram_bytes_written = 0;
    double tensor_pipe_pct = 0, sm_throughput_pct = 0, achieved_occupancy_pct = 0;
    std::vector<std::pair<std::string, double>> top_stalls;  // of its longest kernel
  };
  std::optional<Profile> profile;
  // The output: every element (complete) or a seeded sample.
  std::vector<int64_t> indices;
  std::vector<double> values;
  bool complete = false;
  bool self_check_pass = false;
  std::string no_gpu_path;  // set when the runner had no GPU path for the op
};

// Every record for op `op` of workload `workload` under `root`, one per GPU folder, sorted by GPU name.
// Throws InputError naming the file when a record cannot be read. Without `outputs`, the records' sampled
// outputs (indices, values) are left empty, and reading them costs a fraction of the time.
std::vector<GpuRecord> find_gpu_records(const std::string& root, const std::string& workload,
                                        const std::string& op, bool outputs = true);

}  // namespace tessera::traces
