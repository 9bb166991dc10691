#include "gpu/session.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>

#include "gpu/measure.hpp"

namespace tessera::gpu {

namespace {

// A device-to-device copy by the SMs, 16 bytes a thread: a memcpy node in a CUDA graph runs on a copy engine
// at about 2.8 TB/s on the H200, well under what kernels reach (4.3 TB/s), so the ceiling is a kernel's.
__global__ void copy_kernel(const uint4* from, uint4* to, int64_t words) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < words;
       i += int64_t{gridDim.x} * blockDim.x)
    to[i] = from[i];
}

// The device-to-device copy rate, counting bytes read plus written (METHOD.md's memory ceiling), by device
// time.
double measure_copy_gbps(const cudaDeviceProp& properties) {
  const size_t bytes = size_t{2} << 30;
  DeviceBuffer from(bytes), to(bytes);
  TESSERA_CUDA(cudaMemset(from.get(), 1, bytes));
  const int blocks = properties.multiProcessorCount * 8;
  const Launch copy = [&](int) {
    copy_kernel<<<blocks, 512, 0, work_stream()>>>(static_cast<const uint4*>(from.get()),
                                                   static_cast<uint4*>(to.get()),
                                                   static_cast<int64_t>(bytes / 16));
  };
  const EagerTiming eager = time_eager(copy);
  return 2.0 * bytes / (time_device(copy, 1, eager.median_us).median_us * 1e3);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

}  // namespace

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text << "\n";
  if (!out) fail("cannot write " + path + ": " + std::strerror(errno));
}

// Clocks as the driver reports them now, through NVML. NVML comes with the driver (libnvidia-ml.so.1), not
// the toolkit: it is opened at run time, and a machine without it gets the peak clocks alone.
struct Session::Nvml {
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
    constexpr int kSm = 1, kMemory = 2;  // nvmlClockType_t
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

Session::Session() : nvml_(std::make_unique<Nvml>()) {
  register_builtins();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) fail("no CUDA GPU is visible");
  TESSERA_CUDA(cudaGetDeviceProperties(&context_.properties, 0));
  // Inputs rotate over copies spanning three times the L2, so timed launches read DRAM, not the cache; every
  // launch writes the same output (as PyTorch's captured calls do: its allocator hands each the same block).
  context_.rotate_bytes = static_cast<size_t>(context_.properties.l2CacheSize) * 3;
  idle_ = nvml_->clocks();
}

Session::~Session() = default;

OpMeasurement& Session::measure(const std::string& op_text) {
  const OpArgs op = parse_op(op_text);
  auto runner = op_registry().find(op.get("kind"));
  // The runner's contractions store their accumulator type; an output rounded to a narrower one
  // (`out: bf16`) is not what they compute.
  const bool narrower_output = op.declares("out") && op.get("out") != "accumulator";
  // Nor does it keep partial sums in 16 bits (`psum: fp16`): its tensor cores accumulate in fp32.
  const bool narrower_psums = op.declares("psum") && op.get("psum") != "accumulator";
  if (runner == op_registry().end() || narrower_output || narrower_psums) {
    // Never skipped silently: the record says the op has no GPU path yet.
    OpMeasurement missing;
    missing.record.set("op", Json::object().set("kind", op.get("kind")).set("name", op.get("name")));
    missing.record.set("no_gpu_path",
                       narrower_output ? "tessera_gpu_ref stores a contraction's output in its accumulator "
                                         "type, not out=" +
                                             op.get("out") + ", yet"
                       : narrower_psums
                           ? "tessera_gpu_ref accumulates in fp32, not in psum=" + op.get("psum") + ", yet"
                           : "tessera_gpu_ref has no GPU path for kind " + op.get("kind") + " yet");
    ops_.push_back(op);
    measurements_.push_back(std::move(missing));
    return measurements_.back();
  }
  std::fprintf(stderr, "tessera_gpu_ref: %s\n", op.text.c_str());
  const auto started = std::chrono::steady_clock::now();
  OpMeasurement measured = runner->second(op, context_);  // a failure throws: no record, nothing kept
  ops_.push_back(op);
  measurements_.push_back(std::move(measured));
  std::fprintf(stderr, "tessera_gpu_ref: %s measured in %.2f s\n", op.get("name").c_str(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return measurements_.back();
}

void Session::finish(const std::string& out_dir, const std::string& command, bool skip_ceilings) {
  mkdir(out_dir.c_str(), 0755);
  // The ops first, on a chip that has not just run a second of full-load ceilings; then the ceilings, and the
  // roofline floors from them.
  for (OpMeasurement& measurement : measurements_) measurement.live.clear();
  if (!skip_ceilings) {
    std::fprintf(stderr, "tessera_gpu_ref: %s, measuring ceilings\n", context_.properties.name);
    context_.ceilings.copy_gbps = measure_copy_gbps(context_.properties);
    measure_matmul_ceilings(context_);
  }
  const Clocks loaded = nvml_->clocks();
  // The 8192^3 ceilings run on a chip that has been busy: a sustained rate, which an op timed earlier in the
  // run can beat. A ceiling is what this GPU was seen to reach, so the floors use the larger of the two.
  std::map<std::string, double> used = context_.ceilings.matmul_tflops;
  std::map<std::string, std::string> source;
  for (const auto& entry : used) source[entry.first] = "matmul 8192^3 (after the ops)";
  for (size_t i = 0; i < ops_.size(); ++i) {
    const auto& roofline = measurements_[i].roofline;
    if (roofline && roofline->achieved_tflops > used[roofline->rate_kind]) {
      used[roofline->rate_kind] = roofline->achieved_tflops;
      source[roofline->rate_kind] = "op " + ops_[i].get("name");
    }
  }
  // Likewise the bandwidth: the copy's, or an op's own if it moved its fewest bytes faster.
  double used_gbps = context_.ceilings.copy_gbps;
  std::string gbps_source = "device-to-device copy kernel (after the ops)";
  for (size_t i = 0; i < ops_.size(); ++i) {
    const auto& roofline = measurements_[i].roofline;
    if (!roofline || roofline->achieved_tflops <= 0) continue;
    const double seconds = roofline->flops / (roofline->achieved_tflops * 1e12);
    if (roofline->bytes / seconds / 1e9 > used_gbps) {
      used_gbps = roofline->bytes / seconds / 1e9;
      gbps_source = "op " + ops_[i].get("name");
    }
  }
  for (size_t i = 0; i < ops_.size(); ++i) {
    OpMeasurement& measurement = measurements_[i];
    if (measurement.roofline && !skip_ceilings) {
      const RooflineInput& roofline = *measurement.roofline;
      const double compute_us = roofline.flops / (used.at(roofline.rate_kind) * 1e6);
      const double memory_us = roofline.bytes / (used_gbps * 1e3);
      measurement.record.set("roofline_floor_us", std::max(compute_us, memory_us))
          .set("roofline_bound", compute_us >= memory_us ? "compute" : "memory");
    }
    write_file(out_dir + "/" + ops_[i].get("name") + ".json", measurement.record.dump());
  }

  int runtime = 0, driver_api = 0, peak_sm_khz = 0, peak_memory_khz = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver_api);
  cudaDeviceGetAttribute(&peak_sm_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&peak_memory_khz, cudaDevAttrMemoryClockRate, 0);
  const std::string driver =
      nvml_->ready() ? nvml_->driver() : "CUDA driver API " + std::to_string(driver_api);
  const cudaDeviceProp& properties = context_.properties;
  Json gpu = Json::object();
  gpu.set("name", properties.name)
      .set("compute_capability", std::to_string(properties.major) + "." + std::to_string(properties.minor))
      .set("multiprocessors", static_cast<int64_t>(properties.multiProcessorCount))
      .set("l2_bytes", static_cast<int64_t>(properties.l2CacheSize))
      .set("memory_bytes", static_cast<int64_t>(properties.totalGlobalMem))
      .set("driver", driver)
      .set("cuda_runtime", std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10))
      .set("clocks_peak_mhz", Json::object()
                                  .set("sm", static_cast<int64_t>(peak_sm_khz / 1000))
                                  .set("memory", static_cast<int64_t>(peak_memory_khz / 1000)));
  if (nvml_->ready()) {
    gpu.set("clocks_idle_mhz", Json::object()
                                   .set("sm", static_cast<int64_t>(idle_.sm_mhz))
                                   .set("memory", static_cast<int64_t>(idle_.memory_mhz)))
        .set("clocks_after_ceilings_mhz", Json::object()
                                              .set("sm", static_cast<int64_t>(loaded.sm_mhz))
                                              .set("memory", static_cast<int64_t>(loaded.memory_mhz)));
  } else {
    gpu.set("clocks_as_read", "NVML (libnvidia-ml.so.1) not available");
  }
  Json rates = Json::object();
  for (const auto& [kind, tflops] : context_.ceilings.matmul_tflops) rates.set(kind, tflops);
  Json used_rates = Json::object();
  for (const auto& [kind, tflops] : used)
    used_rates.set(kind, Json::object().set("tflops", tflops).set("from", source[kind]));
  Json ceilings = Json::object();
  ceilings.set("copy_gbps", context_.ceilings.copy_gbps)
      .set("gbps_for_floors", Json::object().set("gbps", used_gbps).set("from", gbps_source))
      .set("matmul_8192_tflops", rates)
      .set("matmul_tflops_for_floors", used_rates);
  Json run_record = Json::object();
  run_record.set("gpu", gpu)
      .set("runner_code", TESSERA_CUDA_CODE)
      .set("ceilings", ceilings)
      .set("date", utc_now())
      .set("command", command)
      .set(
          "timing",
          "per path: device time = median over 15 CUDA-graph replays of launches over input copies spanning "
          "3x the L2, each launch writing the one output (a replay ~1 ms), per launch; eager time = median "
          "over 11 batches of ~1 ms of launches "
          "issued back to back; library candidates (cuBLASLt algorithms, cuDNN plans, kernel tilings) chosen "
          "by device time over 3 short replays each");
  write_file(out_dir + "/run.json", run_record.dump());
}

}  // namespace tessera::gpu
