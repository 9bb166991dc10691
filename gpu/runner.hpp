// The GPU reference runner's shared pieces (issues "The GPU reference run" and "The GPU reference measures
// kernels, not launches"): errors, device buffers, the one stream every timed launch goes to, device time by
// CUDA-graph replay and eager (launch-inclusive) time, a small JSON writer, and the registry that each
// operator kind's paths register in. Depends on the CUDA toolkit alone (it must build on a bare GPU machine).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::gpu {

// Every failure of the runner: a path that cannot run is recorded with the message; anything else ends the
// program (exit 3) or the C API call (an error status).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
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

// The stream every timed launch, library call and check goes to. A graph cannot be captured on the legacy
// default stream; this one is a blocking stream, so the fills and reference kernels on the legacy stream stay
// ordered with it.
cudaStream_t work_stream();

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

// One op of a workload, as `--op kind=gemm,name=ffn1,index=0,m=512,...` gives it. Its fields are read by
// the names gpu/op_fields.cpp lists for its kind, with the defaults listed there.
struct OpArgs {
  std::map<std::string, std::string> values;
  std::string text;
  std::string kind;
  // A key every --op has (kind, name, index, seed, dtype), or a field the kind lists: its value, or the
  // listed default when --op leaves it out. A field the list lacks is the runner's own error (it fails).
  const std::string& get(const std::string& key) const;
  int64_t integer(const std::string& key) const;  // a count
  double real(const std::string& key) const;      // a number
  bool declares(const std::string& key) const;    // the kind lists the field
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
  Json& push(const std::string& value);
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

// ---- timing (timing.cu)

// Device time: `launches_per_graph` launches (rotating over the input copies) captured once into a CUDA
// graph; each replay is timed with events and divided by the launches it holds. No host work separates the
// kernels, so this is what the kernels take on the device, as a framework's CUDA-graph mode or a fused
// program sees it.
struct DeviceTiming {
  double median_us = 0, min_us = 0, max_us = 0;  // per launch, over the replays
  int replays = 0;
  int launches_per_graph = 0;
};

// Eager time: launches issued back to back from the host, batches timed with events, median per launch. For
// a kernel shorter than its launch cost this is the host's issue rate: what a caller launching one op at a
// time sees.
struct EagerTiming {
  double median_us = 0, min_us = 0;
  int batches = 0;
  int launches_per_batch = 0;
};

// How long timing takes: `quick` for choosing among a library's candidates (a few short replays).
struct TimingEffort {
  double graph_target_us = 1000;  // a replay lasts about this long
  int replays = 15;
  double batch_target_us = 1000;
  int batches = 11;
  static TimingEffort quick() { return TimingEffort{300, 3, 300, 3}; }
};

// `launch(i)` issues one launch on work_stream() reading input copy i % copies.
using Launch = std::function<void(int)>;

EagerTiming time_eager(const Launch& launch, const TimingEffort& effort = {});

// A graph of `launches` consecutive launches, launch(first) .. launch(first + launches - 1).
class CapturedGraph {
 public:
  CapturedGraph(const Launch& launch, int launches, int first = 0);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  int launches() const { return launches_; }
  // One replay timed with events, per launch.
  double timed_replay_us();
  // The kernels in the graph, by name (demangled, without arguments), in capture order.
  std::vector<std::string> kernel_names() const;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  int launches_ = 0;
};

// How many launches a graph holds for a launch of about `estimate_us`: enough for a replay of the target
// length, at least every input copy once.
int launches_per_graph(double estimate_us, int copies, const TimingEffort& effort);

DeviceTiming time_device(const Launch& launch, int copies, double estimate_us,
                         const TimingEffort& effort = {});

// The kernels one launch runs, by name (from a graph of it).
std::vector<std::string> kernels_of(const Launch& launch);

// ---- the run

// What the machine measured once per run: copy bandwidth and matrix rates (the roofline's ceilings).
struct Ceilings {
  double copy_gbps = 0;                         // bytes read plus written per second, device to device
  std::map<std::string, double> matmul_tflops;  // by path kind: "bf16", "fp16", "tf32", "fp32", "int8"
};

struct RunContext {
  cudaDeviceProp properties{};
  Ceilings ceilings;
  size_t rotate_bytes = 0;  // inputs are copied until a set of copies spans this (several times the L2)
  bool keep_live = false;   // keep each output class's fastest checked path alive (A/B rounds, profiles)
  // A library candidate chosen earlier, by "<op name>/<path name>": the path builds that one instead of
  // searching (a profile of what a record measured).
  std::map<std::string, std::string> pinned;
  const std::string* pinned_choice(const std::string& op, const std::string& path) const;
  // Only these "<op name>/<path name>" are built (empty: every path); a profile needs no others.
  std::vector<std::string> only;
  bool builds(const std::string& op, const std::string& path) const;
  TimingEffort effort;
};

// What an op's roofline floor needs, filled in once the ceilings are measured (after the ops: the ceilings'
// long full-load runs would otherwise heat the chip before the ops are timed).
struct RooflineInput {
  double flops = 0;
  double bytes = 0;            // the fewest bytes it must move: inputs once, output once
  std::string rate_kind;       // which matrix ceiling applies: "bf16", "fp16", "fp32", "int8"
  double achieved_tflops = 0;  // the reported path's rate: the ceiling of its kind is at least this
};

struct LivePath;   // measure.hpp
struct OpChecker;  // measure.hpp

struct OpMeasurement {
  Json record = Json::object();
  std::optional<RooflineInput> roofline;  // absent for ops with no GPU path
  // With RunContext::keep_live: the fastest checked path of each output class, by path name, and what checks
  // any other output of the op (the framework's) the same way.
  std::map<std::string, std::shared_ptr<LivePath>> live;
  std::shared_ptr<OpChecker> checker;
  // Host tables a framework needs to run the op alike, by name (moe: the host's routing; capi.cu's
  // tgr_table).
  std::map<std::string, std::vector<double>> tables;
};

// A GPU path of one operator kind: given the op, it measures and returns the op's record.
using OpRunner = std::function<OpMeasurement(const OpArgs&, const RunContext&)>;
std::map<std::string, OpRunner>& op_registry();

// Each operator kind's file registers its path here; register_builtins() calls each once. Adding an operator
// is one file with its register function, listed in register_builtins (runner_common.cu), and its fields'
// line in gpu/op_fields.cpp (tests/ops/gpu_fields_test.cpp checks it against the op registry).
void register_gemm();
void register_conv();
void register_pool();
void register_vector();
void register_attention();
void register_rope();
void register_moe();
void register_builtins();

// The bf16, fp16, tf32, fp32 and int8 matrix rates of a large square GEMM (gemm.cu measures them).
void measure_matmul_ceilings(RunContext& context);

}  // namespace tessera::gpu
