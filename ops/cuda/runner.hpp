// The GPU reference runner's shared pieces (issue: "The GPU reference run"): error checks, device buffers,
// event timing with medians over rotated inputs, a small JSON writer, and the registry that GPU paths of each
// operator kind register in. Depends on the CUDA toolkit alone (it must build on a bare GPU machine).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::gpu {

[[noreturn]] void fail(const std::string& message);

#define TESSERA_CUDA(call)                                                                               \
  do {                                                                                                   \
    const cudaError_t status_ = (call);                                                                  \
    if (status_ != cudaSuccess)                                                                          \
      ::tessera::gpu::fail(std::string(#call) + ": " + cudaGetErrorString(status_) + " at " + __FILE__ + \
                           ":" + std::to_string(__LINE__));                                              \
  } while (0)

// Checks the launch just made and waits for it (reference fills and checks, never timed code).
void check_launch(const char* what);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return pointer_; }
  size_t bytes() const { return bytes_; }

 private:
  void* pointer_ = nullptr;
  size_t bytes_ = 0;
};

// One op of a workload, as `--op kind=gemm,name=ffn1,index=0,m=512,...` gives it.
struct OpArgs {
  std::map<std::string, std::string> values;
  std::string text;
  const std::string& get(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  int64_t integer(const std::string& key, int64_t fallback) const;  // `fallback` when the key is absent
};
OpArgs parse_op(const std::string& text);

// Minimal JSON writer: objects and arrays built in order, numbers written with enough digits to round-trip.
class Json {
 public:
  static Json object();
  static Json array();
  Json& set(const std::string& key, const Json& value);
  Json& set(const std::string& key, const std::string& value);
  Json& set(const std::string& key, const char* value);
  Json& set(const std::string& key, double value);
  Json& set(const std::string& key, int64_t value);
  Json& set(const std::string& key, bool value);
  Json& push(const Json& value);
  Json& push(double value);
  Json& push(int64_t value);
  std::string dump() const { return text_ + (object_ ? "}" : "]"); }

 private:
  static std::string quote(const std::string& text);
  void separate();
  std::string text_;
  bool object_ = true;
  bool empty_ = true;
};
std::string number_text(double value);

// Times `launch(i)` (i selects the rotated input copy) with CUDA events: batches long enough to dwarf the
// event overhead, many batches, median per launch.
struct Timing {
  double median_us = 0;
  double min_us = 0;
  int batches = 0;
  int launches_per_batch = 0;
};
Timing time_launches(const std::function<void(int)>& launch, int warmup = 5, int batches = 21);

// What the machine measured once per run: copy bandwidth and matrix rates (the roofline's ceilings).
struct Ceilings {
  double copy_gbps = 0;                         // bytes read plus written per second, device to device
  std::map<std::string, double> matmul_tflops;  // by path kind: "bf16", "fp16", "tf32", "fp32", "int8"
};

struct RunContext {
  cudaDeviceProp properties{};
  Ceilings ceilings;
  size_t rotate_bytes = 0;  // inputs are copied until a set of copies spans this (several times the L2)
};

// What an op's roofline floor needs, filled in once the ceilings are measured (after the ops: the ceilings'
// long full-load runs would otherwise heat the chip before the ops are timed).
struct RooflineInput {
  double flops = 0;
  double bytes = 0;            // the fewest bytes it must move: inputs once, output once
  std::string rate_kind;       // which matrix ceiling applies: "bf16", "fp16", "fp32", "int8"
  double achieved_tflops = 0;  // the reported path's rate: the ceiling of its kind is at least this
};

struct OpMeasurement {
  Json record = Json::object();
  std::optional<RooflineInput> roofline;  // absent for ops with no GPU path
};

// A GPU path of one operator kind: given the op, it measures and returns the op's record.
using OpRunner = std::function<OpMeasurement(const OpArgs&, const RunContext&)>;
std::map<std::string, OpRunner>& op_registry();

// Each operator kind's file registers its path here; main() calls register_builtins() once. Adding an
// operator is one file with its register function, listed in register_builtins (runner_main.cu).
void register_gemm();
void register_conv();
void register_pool();
void register_builtins();

// The bf16, fp16, tf32, fp32 and int8 matrix rates of a large square GEMM (gemm.cu measures them).
void measure_matmul_ceilings(RunContext& context);

}  // namespace tessera::gpu
