// The runner as a shared library with a C interface (libtessera_gpu_ref.so), for the PyTorch A/B driver
// (scripts/gpu_torch_reference.py, through ctypes): one process, one CUDA context, the runner's and PyTorch's
// launches of the same op interleaved replay by replay, the framework's outputs made from the same generated
// inputs and checked the same way as the runner's. Every call returns 0 (or a handle, or a time) on success
// and -1 on failure, with tgr_error() saying why.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.cuh"
#include "gpu/measure.hpp"
#include "gpu/session.hpp"

namespace tessera::gpu {
namespace {

std::unique_ptr<Session> session;
std::string last_error, last_text;

template <class F>
auto guarded(F&& body, decltype(body()) on_error) -> decltype(body()) {
  try {
    if (!session) session = std::make_unique<Session>();
    return body();
  } catch (const Error& error) {
    last_error = error.what();
  } catch (const std::exception& error) {
    last_error = std::string("internal: ") + error.what();
  }
  cudaGetLastError();
  return on_error;
}

OpMeasurement& measurement_of(int handle) {
  if (handle < 0 || static_cast<size_t>(handle) >= session->size())
    fail("no op handle " + std::to_string(handle));
  return session->measurement(static_cast<size_t>(handle));
}

LivePath& live_path(int handle, const char* path) {
  OpMeasurement& measurement = measurement_of(handle);
  const auto found = measurement.live.find(path);
  if (found == measurement.live.end())
    fail(std::string("op ") + std::to_string(handle) + " keeps no live path " + path +
         " (only each output class's fastest checked path is kept)");
  return *found->second;
}

OutputType output_type_named(const std::string& name) {
  for (OutputType type : {OutputType::fp32, OutputType::int32, OutputType::bf16, OutputType::fp16})
    if (name == name_of(type)) return type;
  fail("no output type " + name);
}

}  // namespace
}  // namespace tessera::gpu

using namespace tessera::gpu;

extern "C" {

const char* tgr_error() {
  return last_error.c_str();
}

// Measures one op (the runner's --op text) with its live paths kept; returns the op's handle.
int tgr_measure(const char* op_text) {
  return guarded(
      [&] {
        session->context().keep_live = true;
        session->measure(op_text);
        return static_cast<int>(session->size()) - 1;
      },
      -1);
}

// The op's record (JSON), valid until the next call.
const char* tgr_record(int handle) {
  return guarded(
      [&] {
        last_text = measurement_of(handle).record.dump();
        return last_text.c_str();
      },
      static_cast<const char*>(nullptr));
}

// The launches per graph the runner's device time of `path` used.
int tgr_launches_per_graph(int handle, const char* path) {
  return guarded([&] { return live_path(handle, path).launches_per_graph; }, -1);
}

// One timed replay of a graph of `launches` launches of the path (captured on first use), per launch (us).
double tgr_replay_us(int handle, const char* path, int launches) {
  return guarded(
      [&] {
        LivePath& live = live_path(handle, path);
        if (!live.graph || live.graph->launches() != launches)
          live.graph = std::make_unique<CapturedGraph>(live.launch, launches);
        return live.graph->timed_replay_us();
      },
      -1.0);
}

// Checks an output in device memory (e.g. PyTorch's) like the runner's paths: written, finite, the sampled
// positions against the float64 reference and the whole against the anchor path. Returns the check (JSON).
const char* tgr_check(int handle, unsigned long long device_pointer, const char* output_type,
                      double tolerance) {
  return guarded(
      [&] {
        OpMeasurement& measurement = measurement_of(handle);
        if (!measurement.checker) fail("op " + std::to_string(handle) + " has no checker");
        TESSERA_CUDA(cudaDeviceSynchronize());
        last_text = measurement.checker
                        ->check(reinterpret_cast<const void*>(device_pointer), output_type_named(output_type),
                                tolerance)
                        .json()
                        .dump();
        return last_text.c_str();
      },
      static_cast<const char*>(nullptr));
}

// The tolerance the runner gives an output of this type (tolerance_for).
double tgr_tolerance(const char* output_type, int reduced_precision_inputs, int tf32) {
  return guarded(
      [&] { return tolerance_for(output_type_named(output_type), reduced_precision_inputs != 0, tf32 != 0); },
      -1.0);
}

// The generator's tensor id of input `slot` of op `index` (ops/input_generator.hpp).
long long tgr_tensor_id(int index, int slot) {
  return static_cast<long long>(
      tessera::ops::tensor_id(static_cast<uint32_t>(index), static_cast<uint32_t>(slot)));
}

// Fills `count` elements at a device pointer with the generator's values of tensor `tensor` in `dtype`
// (fp32, bf16, fp16, int8): the inputs the runner and the simulator use.
int tgr_generate(const char* dtype, unsigned long long seed, long long tensor, long long count,
                 unsigned long long device_pointer) {
  return guarded(
      [&] {
        fill_input<<<grid_for(count), 256>>>(parse_dtype(dtype), seed, static_cast<uint32_t>(tensor), count,
                                             reinterpret_cast<void*>(device_pointer));
        check_launch("generate an input");
        return 0;
      },
      -1);
}

// Copies the op's host table `name` (OpMeasurement::tables, e.g. a moe's "moe.experts") into `out` (host
// memory of `capacity` doubles); returns its length (nothing copied when it is longer than capacity).
long long tgr_table(int handle, const char* name, double* out, long long capacity) {
  return guarded(
      [&] {
        const auto& tables = measurement_of(handle).tables;
        const auto found = tables.find(name);
        if (found == tables.end()) fail("op " + std::to_string(handle) + " has no table " + name);
        const auto length = static_cast<long long>(found->second.size());
        if (length <= capacity) std::copy(found->second.begin(), found->second.end(), out);
        return length;
      },
      -1LL);
}

// Frees the op's live paths (its record stays for tgr_finish).
int tgr_release(int handle) {
  return guarded(
      [&] {
        OpMeasurement& measurement = measurement_of(handle);
        measurement.live.clear();
        measurement.checker.reset();
        return 0;
      },
      -1);
}

// The ceilings (unless skipped), the roofline floors, every op's record and run.json, written to out_dir.
int tgr_finish(const char* out_dir, const char* command, int skip_ceilings) {
  return guarded(
      [&] {
        session->finish(out_dir, command, skip_ceilings != 0);
        return 0;
      },
      -1);
}

}  // extern "C"
