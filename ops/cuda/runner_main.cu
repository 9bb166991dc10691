// tessera_gpu_ref: runs workload ops on the local NVIDIA GPU with the same seeded inputs as the simulator and
// the CPU reference, and writes one JSON record per op plus run.json (the GPU, its clocks as read, the
// measured ceilings, how the record was made).
//
//   tessera_gpu_ref --out DIR --op kind=gemm,name=ffn1,index=0,m=512,n=3072,k=768,dtype=bf16,seed=7 [--op
//   ...] [--skip-ceilings]
//
// --skip-ceilings leaves out the copy and matrix ceilings (and so the roofline floors): for repeated timings
// of one op (scripts/gpu-reference.sh's A/B rounds), where a second of full-load GEMMs would heat the chip.
// `tessera ref` and scripts/gpu-reference.sh build the --op arguments from a workload YAML.
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>

#include "ops/cuda/runner.hpp"

namespace tessera::gpu {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text << "\n";
  if (!out) fail("cannot write " + path + ": " + std::strerror(errno));
}

// The device-to-device copy rate, counting bytes read plus written (METHOD.md's memory ceiling).
double measure_copy_gbps() {
  const size_t bytes = size_t{2} << 30;
  DeviceBuffer from(bytes), to(bytes);
  TESSERA_CUDA(cudaMemset(from.get(), 1, bytes));
  const Timing timing = time_launches(
      [&](int) { TESSERA_CUDA(cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice)); }, 3,
      11);
  return 2.0 * bytes / (timing.median_us * 1e3);
}

// Clocks as the driver reports them now, through NVML. NVML comes with the driver (libnvidia-ml.so.1), not
// the toolkit: it is opened at run time, and a machine without it gets the peak clocks alone.
struct Clocks {
  unsigned sm_mhz = 0, memory_mhz = 0;
};

class Nvml {
 public:
  Nvml() {
    library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!library_) return;
    auto init = reinterpret_cast<int (*)()>(dlsym(library_, "nvmlInit_v2"));
    auto handle =
        reinterpret_cast<int (*)(unsigned, void**)>(dlsym(library_, "nvmlDeviceGetHandleByIndex_v2"));
    clock_info_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(library_, "nvmlDeviceGetClockInfo"));
    driver_ = reinterpret_cast<int (*)(char*, unsigned)>(dlsym(library_, "nvmlSystemGetDriverVersion"));
    ready_ = init && handle && clock_info_ && driver_ && init() == 0 && handle(0, &device_) == 0;
  }
  bool ready() const { return ready_; }
  Clocks clocks() const {
    Clocks clocks;
    if (!ready_) return clocks;
    constexpr int kGraphics = 0, kSm = 1, kMemory = 2;  // nvmlClockType_t
    (void)kGraphics;
    clock_info_(device_, kSm, &clocks.sm_mhz);
    clock_info_(device_, kMemory, &clocks.memory_mhz);
    return clocks;
  }
  std::string driver() const {
    char text[96] = "";
    return ready_ && driver_(text, sizeof text) == 0 ? std::string(text) : std::string();
  }

 private:
  void* library_ = nullptr;
  void* device_ = nullptr;
  int (*clock_info_)(void*, int, unsigned*) = nullptr;
  int (*driver_)(char*, unsigned) = nullptr;
  bool ready_ = false;
};

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

int run(int argc, char** argv) {
  std::string out_dir;
  std::vector<OpArgs> ops;
  std::string command = "tessera_gpu_ref";
  bool skip_ceilings = false;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    command += " " + argument;
    if (argument == "--skip-ceilings") {
      skip_ceilings = true;
    } else if (argument == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
      command += std::string(" ") + argv[i];
    } else if (argument == "--op" && i + 1 < argc) {
      ops.push_back(parse_op(argv[++i]));
      command += std::string(" ") + argv[i];
    } else {
      std::fprintf(
          stderr,
          "usage: tessera_gpu_ref --out DIR --op kind=gemm,name=N,index=I,m=M,n=N,k=K,dtype=T,seed=S ... "
          "[--skip-ceilings]\n");
      return 2;
    }
  }
  if (out_dir.empty() || ops.empty()) {
    std::fprintf(stderr, "tessera_gpu_ref: give --out DIR and at least one --op\n");
    return 2;
  }
  mkdir(out_dir.c_str(), 0755);
  register_builtins();

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) fail("no CUDA GPU is visible");
  RunContext context;
  TESSERA_CUDA(cudaGetDeviceProperties(&context.properties, 0));
  // Inputs rotate over copies spanning three times the L2, so timed launches read DRAM, not the cache.
  context.rotate_bytes = static_cast<size_t>(context.properties.l2CacheSize) * 3;

  const Nvml nvml;
  const Clocks idle = nvml.clocks();
  // The ops first, on a chip that has not just run a second of full-load ceilings; then the ceilings, and the
  // roofline floors from them.
  std::vector<OpMeasurement> measurements;
  for (const OpArgs& op : ops) {
    auto runner = op_registry().find(op.get("kind"));
    if (runner == op_registry().end()) {
      // Never skipped silently: the record says the op has no GPU path yet.
      OpMeasurement missing;
      missing.record.set("op", Json::object().set("kind", op.get("kind")).set("name", op.get("name")));
      missing.record.set("no_gpu_path",
                         "tessera_gpu_ref has no GPU path for kind " + op.get("kind") + " yet");
      measurements.push_back(std::move(missing));
      continue;
    }
    std::fprintf(stderr, "tessera_gpu_ref: %s\n", op.text.c_str());
    const auto started = std::chrono::steady_clock::now();
    measurements.push_back(runner->second(op, context));
    std::fprintf(stderr, "tessera_gpu_ref: %s measured in %.2f s\n", op.get("name").c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  if (!skip_ceilings) {
    std::fprintf(stderr, "tessera_gpu_ref: %s, measuring ceilings\n", context.properties.name);
    context.ceilings.copy_gbps = measure_copy_gbps();
    measure_matmul_ceilings(context);
  }
  const Clocks loaded = nvml.clocks();
  // The 8192^3 ceilings run on a chip that has been busy: a sustained rate, which an op timed earlier in the
  // run can beat. A ceiling is what this GPU was seen to reach, so the floors use the larger of the two.
  std::map<std::string, double> used = context.ceilings.matmul_tflops;
  std::map<std::string, std::string> source;
  for (const auto& entry : used) source[entry.first] = "matmul 8192^3 (after the ops)";
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& roofline = measurements[i].roofline;
    if (roofline && roofline->achieved_tflops > used[roofline->rate_kind]) {
      used[roofline->rate_kind] = roofline->achieved_tflops;
      source[roofline->rate_kind] = "op " + ops[i].get("name");
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    OpMeasurement& measurement = measurements[i];
    if (measurement.roofline && !skip_ceilings) {
      const RooflineInput& roofline = *measurement.roofline;
      const double compute_us = roofline.flops / (used.at(roofline.rate_kind) * 1e6);
      const double memory_us = roofline.bytes / (context.ceilings.copy_gbps * 1e3);
      measurement.record.set("roofline_floor_us", std::max(compute_us, memory_us))
          .set("roofline_bound", compute_us >= memory_us ? "compute" : "memory");
    }
    write_file(out_dir + "/" + ops[i].get("name") + ".json", measurement.record.dump());
  }

  int runtime = 0, driver_api = 0, peak_sm_khz = 0, peak_memory_khz = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver_api);
  cudaDeviceGetAttribute(&peak_sm_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&peak_memory_khz, cudaDevAttrMemoryClockRate, 0);
  const std::string driver = nvml.ready() ? nvml.driver() : "CUDA driver API " + std::to_string(driver_api);
  Json gpu = Json::object();
  gpu.set("name", context.properties.name)
      .set("compute_capability",
           std::to_string(context.properties.major) + "." + std::to_string(context.properties.minor))
      .set("multiprocessors", static_cast<int64_t>(context.properties.multiProcessorCount))
      .set("l2_bytes", static_cast<int64_t>(context.properties.l2CacheSize))
      .set("memory_bytes", static_cast<int64_t>(context.properties.totalGlobalMem))
      .set("driver", driver)
      .set("cuda_runtime", std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10))
      .set("clocks_peak_mhz", Json::object()
                                  .set("sm", static_cast<int64_t>(peak_sm_khz / 1000))
                                  .set("memory", static_cast<int64_t>(peak_memory_khz / 1000)));
  if (nvml.ready()) {
    gpu.set("clocks_idle_mhz", Json::object()
                                   .set("sm", static_cast<int64_t>(idle.sm_mhz))
                                   .set("memory", static_cast<int64_t>(idle.memory_mhz)))
        .set("clocks_after_ceilings_mhz", Json::object()
                                              .set("sm", static_cast<int64_t>(loaded.sm_mhz))
                                              .set("memory", static_cast<int64_t>(loaded.memory_mhz)));
  } else {
    gpu.set("clocks_as_read", "NVML (libnvidia-ml.so.1) not available");
  }
  Json rates = Json::object();
  for (const auto& [kind, tflops] : context.ceilings.matmul_tflops) rates.set(kind, tflops);
  Json used_rates = Json::object();
  for (const auto& [kind, tflops] : used)
    used_rates.set(kind, Json::object().set("tflops", tflops).set("from", source[kind]));
  Json ceilings = Json::object();
  ceilings.set("copy_gbps", context.ceilings.copy_gbps)
      .set("matmul_8192_tflops", rates)
      .set("matmul_tflops_for_floors", used_rates);
  Json run_record = Json::object();
  run_record.set("gpu", gpu)
      .set("ceilings", ceilings)
      .set("date", utc_now())
      .set("command", command)
      .set("timing",
           "CUDA events; per path: warm-up, 21 batches of ~2 ms, median per launch; inputs rotated over "
           "copies spanning 3x the L2");
  write_file(out_dir + "/run.json", run_record.dump());
  return 0;
}

}  // namespace
}  // namespace tessera::gpu

int main(int argc, char** argv) {
  return tessera::gpu::run(argc, argv);
}
