#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/cuda/runner.hpp"

namespace tessera::gpu {

void fail(const std::string& message) {
  std::fprintf(stderr, "tessera_gpu_ref: %s\n", message.c_str());
  std::exit(3);
}

void check_launch(const char* what) {
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) fail(std::string(what) + ": launch failed: " + cudaGetErrorString(launched));
  const cudaError_t finished = cudaDeviceSynchronize();
  if (finished != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(finished));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  TESSERA_CUDA(cudaMalloc(&pointer_, std::max<size_t>(bytes, 1)));
}
DeviceBuffer::~DeviceBuffer() {
  if (pointer_) cudaFree(pointer_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : pointer_(other.pointer_), bytes_(other.bytes_) {
  other.pointer_ = nullptr;
  other.bytes_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(pointer_, other.pointer_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

const std::string& OpArgs::get(const std::string& key) const {
  auto found = values.find(key);
  if (found == values.end()) fail("--op " + text + ": no " + key + "=");
  return found->second;
}

int64_t OpArgs::integer(const std::string& key) const {
  const std::string& value = get(key);
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || parsed < 0)
    fail("--op " + text + ": " + key + "=" + value + " is not a count");
  return parsed;
}

int64_t OpArgs::integer(const std::string& key, int64_t fallback) const {
  return values.count(key) ? integer(key) : fallback;
}

OpArgs parse_op(const std::string& text) {
  OpArgs op;
  op.text = text;
  std::stringstream pairs(text);
  for (std::string pair; std::getline(pairs, pair, ',');) {
    const size_t equals = pair.find('=');
    if (equals == std::string::npos) fail("--op " + text + ": '" + pair + "' is not key=value");
    op.values[pair.substr(0, equals)] = pair.substr(equals + 1);
  }
  op.get("kind");
  op.get("name");
  return op;
}

std::string number_text(double value) {
  if (!std::isfinite(value)) return value != value ? "\"nan\"" : (value > 0 ? "\"inf\"" : "\"-inf\"");
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

Json Json::object() {
  Json json;
  json.text_ = "{";
  json.object_ = true;
  return json;
}

Json Json::array() {
  Json json;
  json.text_ = "[";
  json.object_ = false;
  return json;
}

std::string Json::quote(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (c == '\n') {
      quoted += "\\n";
      continue;
    }
    quoted += c;
  }
  return quoted + "\"";
}

void Json::separate() {
  if (!empty_) text_ += ", ";
  empty_ = false;
}

Json& Json::set(const std::string& key, const Json& value) {
  separate();
  text_ += quote(key) + ": " + value.dump();
  return *this;
}
Json& Json::set(const std::string& key, const std::string& value) {
  separate();
  text_ += quote(key) + ": " + quote(value);
  return *this;
}
Json& Json::set(const std::string& key, const char* value) {
  return set(key, std::string(value));
}
Json& Json::set(const std::string& key, double value) {
  separate();
  text_ += quote(key) + ": " + number_text(value);
  return *this;
}
Json& Json::set(const std::string& key, int64_t value) {
  separate();
  text_ += quote(key) + ": " + std::to_string(value);
  return *this;
}
Json& Json::set(const std::string& key, bool value) {
  separate();
  text_ += quote(key) + ": " + (value ? "true" : "false");
  return *this;
}
Json& Json::push(const Json& value) {
  separate();
  text_ += value.dump();
  return *this;
}
Json& Json::push(double value) {
  separate();
  text_ += number_text(value);
  return *this;
}
Json& Json::push(int64_t value) {
  separate();
  text_ += std::to_string(value);
  return *this;
}

Timing time_launches(const std::function<void(int)>& launch, int warmup, int batches) {
  cudaEvent_t start, stop;
  TESSERA_CUDA(cudaEventCreate(&start));
  TESSERA_CUDA(cudaEventCreate(&stop));
  // Warm up (module load, heuristics, clocks), and estimate one launch.
  for (int i = 0; i < warmup; ++i) launch(i);
  TESSERA_CUDA(cudaEventRecord(start));
  launch(0);
  TESSERA_CUDA(cudaEventRecord(stop));
  TESSERA_CUDA(cudaEventSynchronize(stop));
  float one_ms = 0;
  TESSERA_CUDA(cudaEventElapsedTime(&one_ms, start, stop));
  // Batches of about 2 ms: event resolution and launch gaps are then small against the work.
  Timing timing;
  timing.launches_per_batch =
      std::max(1, std::min(2000, static_cast<int>(std::ceil(2.0 / std::max(one_ms, 1e-4f)))));
  timing.batches = batches;
  std::vector<double> per_launch_us;
  int rotation = 0;
  for (int batch = 0; batch < batches; ++batch) {
    TESSERA_CUDA(cudaEventRecord(start));
    for (int i = 0; i < timing.launches_per_batch; ++i) launch(rotation++);
    TESSERA_CUDA(cudaEventRecord(stop));
    TESSERA_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    TESSERA_CUDA(cudaEventElapsedTime(&ms, start, stop));
    per_launch_us.push_back(1000.0 * ms / timing.launches_per_batch);
  }
  check_launch("timed launches");
  std::sort(per_launch_us.begin(), per_launch_us.end());
  timing.median_us = per_launch_us[per_launch_us.size() / 2];
  timing.min_us = per_launch_us.front();
  TESSERA_CUDA(cudaEventDestroy(start));
  TESSERA_CUDA(cudaEventDestroy(stop));
  return timing;
}

std::map<std::string, OpRunner>& op_registry() {
  static std::map<std::string, OpRunner> registry;
  return registry;
}

void register_builtins() {
  register_gemm();
  register_conv();
  register_pool();
}

}  // namespace tessera::gpu
