// Device time by CUDA-graph replay, eager time by back-to-back launches, and the kernels a launch runs
// (runner.hpp). Graph nodes are read through the driver API: a library's kernels (cuBLAS, cuDNN) are driver
// functions, which the runtime API cannot name.
#include <cuda.h>
#include <cxxabi.h>

#include <algorithm>
#include <cmath>

#include "gpu/runner.hpp"

namespace tessera::gpu {

namespace {

// A demangled kernel name without its argument list ("void foo<128>(float*)" -> "foo<128>").
std::string readable(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  if (name.rfind("void ", 0) == 0) name = name.substr(5);
  for (size_t at; (at = name.find("(anonymous namespace)::")) != std::string::npos;)
    name.erase(at, std::string("(anonymous namespace)::").size());
  // Cut the argument list: the last top-level parenthesis.
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0) return name.substr(0, i);
  }
  return name;
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

EagerTiming time_eager(const Launch& launch, const TimingEffort& effort) {
  cudaStream_t stream = work_stream();
  cudaEvent_t start, stop;
  TESSERA_CUDA(cudaEventCreate(&start));
  TESSERA_CUDA(cudaEventCreate(&stop));
  // Warm up (module load, heuristics, clocks), and estimate one launch.
  for (int i = 0; i < 3; ++i) launch(i);
  TESSERA_CUDA(cudaEventRecord(start, stream));
  launch(0);
  TESSERA_CUDA(cudaEventRecord(stop, stream));
  TESSERA_CUDA(cudaEventSynchronize(stop));
  float one_ms = 0;
  TESSERA_CUDA(cudaEventElapsedTime(&one_ms, start, stop));
  EagerTiming timing;
  timing.launches_per_batch = std::clamp(
      static_cast<int>(std::ceil(effort.batch_target_us / std::max(1000.0 * one_ms, 0.1))), 1, 2000);
  timing.batches = effort.batches;
  std::vector<double> per_launch_us;
  int rotation = 0;
  for (int batch = 0; batch < effort.batches; ++batch) {
    TESSERA_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < timing.launches_per_batch; ++i) launch(rotation++);
    TESSERA_CUDA(cudaEventRecord(stop, stream));
    TESSERA_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    TESSERA_CUDA(cudaEventElapsedTime(&ms, start, stop));
    per_launch_us.push_back(1000.0 * ms / timing.launches_per_batch);
  }
  check_launch("eager launches");
  timing.median_us = median_of(per_launch_us);
  timing.min_us = *std::min_element(per_launch_us.begin(), per_launch_us.end());
  TESSERA_CUDA(cudaEventDestroy(start));
  TESSERA_CUDA(cudaEventDestroy(stop));
  return timing;
}

CapturedGraph::CapturedGraph(const Launch& launch, int launches, int first) : launches_(launches) {
  cudaStream_t stream = work_stream();
  TESSERA_CUDA(cudaStreamSynchronize(stream));
  TESSERA_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < launches; ++i) launch(first + i);
  } catch (const Error&) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph_);
  if (ended != cudaSuccess || !graph_) {
    cudaGetLastError();
    fail(std::string("graph capture: ") + cudaGetErrorString(ended) +
         " (a call in the path cannot be captured in a CUDA graph)");
  }
  TESSERA_CUDA(cudaGraphInstantiate(&exec_, graph_, 0));
  TESSERA_CUDA(cudaEventCreate(&start_));
  TESSERA_CUDA(cudaEventCreate(&stop_));
  // The first replay uploads the graph; it is not timed.
  TESSERA_CUDA(cudaGraphLaunch(exec_, stream));
  TESSERA_CUDA(cudaStreamSynchronize(stream));
}

CapturedGraph::~CapturedGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

double CapturedGraph::timed_replay_us() {
  cudaStream_t stream = work_stream();
  TESSERA_CUDA(cudaEventRecord(start_, stream));
  TESSERA_CUDA(cudaGraphLaunch(exec_, stream));
  TESSERA_CUDA(cudaEventRecord(stop_, stream));
  TESSERA_CUDA(cudaEventSynchronize(stop_));
  float ms = 0;
  TESSERA_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return 1000.0 * ms / launches_;
}

std::vector<std::string> CapturedGraph::kernel_names() const {
  size_t count = 0;
  TESSERA_CUDA(cudaGraphGetNodes(graph_, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  TESSERA_CUDA(cudaGraphGetNodes(graph_, nodes.data(), &count));
  std::vector<std::string> names;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    TESSERA_CUDA(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    // A library kernel loaded context-independently is a CUkernel, others a CUfunction.
    CUDA_KERNEL_NODE_PARAMS params{};
    const char* name = nullptr;
    if (cuGraphKernelNodeGetParams(reinterpret_cast<CUgraphNode>(node), &params) == CUDA_SUCCESS) {
      if (params.func && cuFuncGetName(&name, params.func) != CUDA_SUCCESS) name = nullptr;
      if (!name && params.kern && cuKernelGetName(&name, params.kern) != CUDA_SUCCESS) name = nullptr;
    }
    names.push_back(name ? readable(name) : "(unnamed kernel)");
  }
  return names;
}

int launches_per_graph(double estimate_us, int copies, const TimingEffort& effort) {
  const double estimate = std::max(estimate_us, 0.5);
  const int for_length = static_cast<int>(std::ceil(effort.graph_target_us / estimate));
  // Every input copy once, so that a replay reads none of them from the L2 — but a replay no longer than 10x
  // the target: a launch that long reads its inputs from DRAM anyway (MobileNet-V2's depthwise convs through
  // a slow path spent minutes on replays of 64 launches of milliseconds).
  const int longest =
      std::max(for_length, static_cast<int>(std::ceil(10 * effort.graph_target_us / estimate)));
  return std::clamp(std::min(std::max(for_length, copies), longest), 1, 1000);
}

DeviceTiming time_device(const Launch& launch, int copies, double estimate_us, const TimingEffort& effort) {
  CapturedGraph graph(launch, launches_per_graph(estimate_us, copies, effort));
  std::vector<double> per_launch_us;
  for (int replay = 0; replay < effort.replays; ++replay) per_launch_us.push_back(graph.timed_replay_us());
  check_launch("graph replays");
  DeviceTiming timing;
  timing.median_us = median_of(per_launch_us);
  timing.min_us = *std::min_element(per_launch_us.begin(), per_launch_us.end());
  timing.max_us = *std::max_element(per_launch_us.begin(), per_launch_us.end());
  timing.replays = effort.replays;
  timing.launches_per_graph = graph.launches();
  return timing;
}

std::vector<std::string> kernels_of(const Launch& launch) {
  return CapturedGraph(launch, 1).kernel_names();
}

}  // namespace tessera::gpu
