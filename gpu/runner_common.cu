#include <algorithm>
#include <cmath>
#include <cstring>

#include "gpu/runner.hpp"

#include "gpu/op_fields.hpp"

namespace tessera::gpu {

void fail(const std::string& message) {
  throw Error(message);
}

cudaStream_t work_stream() {
  static cudaStream_t stream = [] {
    cudaStream_t created = nullptr;
    TESSERA_CUDA(cudaStreamCreate(&created));
    return created;
  }();
  return stream;
}

bool RunContext::builds(const std::string& op, const std::string& path) const {
  if (only.empty()) return true;
  for (const std::string& wanted : only)
    if (wanted == op + "/" + path) return true;
  return false;
}

const std::string* RunContext::pinned_choice(const std::string& op, const std::string& path) const {
  const auto found = pinned.find(op + "/" + path);
  return found == pinned.end() ? nullptr : &found->second;
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
  const RunnerField* field = is_common_key(key) ? nullptr : runner_field(kind, key);
  if (!is_common_key(key) && !field)
    fail("the runner reads " + key + " of a " + kind + ", which gpu/op_fields.cpp does not list for it");
  auto found = values.find(key);
  if (found != values.end()) return found->second;
  if (field && !field->required) return field->fallback;
  fail("--op " + text + ": no " + key + "=");
}

bool OpArgs::declares(const std::string& key) const {
  return runner_field(kind, key) != nullptr;
}

int64_t OpArgs::integer(const std::string& key) const {
  const std::string& value = get(key);
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || parsed < 0)
    fail("--op " + text + ": " + key + "=" + value + " is not a count");
  return parsed;
}

double OpArgs::real(const std::string& key) const {
  const std::string& value = get(key);
  char* end = nullptr;
  const double parsed = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0') fail("--op " + text + ": " + key + " is not a number");
  return parsed;
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
  op.kind = op.get("kind");
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
Json& Json::push(const std::string& value) {
  separate();
  text_ += quote(value);
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

std::map<std::string, OpRunner>& op_registry() {
  static std::map<std::string, OpRunner> registry;
  return registry;
}

void register_builtins() {
  register_gemm();
  register_conv();
  register_pool();
  register_vector();
  register_attention();
  register_rope();
  register_moe();
}

}  // namespace tessera::gpu
