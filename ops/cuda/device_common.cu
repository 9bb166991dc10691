#include <cmath>

#include "ops/cuda/device.cuh"

namespace tessera::gpu {

namespace {
template <class T>
__global__ void gather(const T* values, const int64_t* indices, int count, double* out) {
  const int sample = blockIdx.x * blockDim.x + threadIdx.x;
  if (sample < count) out[sample] = static_cast<double>(values[indices[sample]]);
}
constexpr int kSamples = 4096;
}  // namespace

cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t created;
    TESSERA_CUBLAS(cublasLtCreate(&created));
    return created;
  }();
  return handle;
}

Json path_json(const PathResult& path, double flops, double bytes) {
  Json json = Json::object();
  json.set("path", path.name).set("numerics", path.numerics).set("ran", path.ran);
  if (!path.ran)
    return json.set("note",
                    path.note.empty() ? "the library has no algorithm for this shape and type" : path.note);
  if (path.algorithms_tried > 0) json.set("algorithms_tried", static_cast<int64_t>(path.algorithms_tried));
  if (!path.chosen.empty()) json.set("chosen", path.chosen);
  json.set("time_us", path.timing.median_us)
      .set("time_us_min", path.timing.min_us)
      .set("batches", static_cast<int64_t>(path.timing.batches))
      .set("launches_per_batch", static_cast<int64_t>(path.timing.launches_per_batch))
      .set("tflops", flops / (path.timing.median_us * 1e6))
      .set("gbps", bytes / (path.timing.median_us * 1e3));
  return json;
}

std::vector<int64_t> sample_positions(int64_t elements, uint64_t seed) {
  std::vector<int64_t> positions;
  if (elements <= kSamples) {
    for (int64_t i = 0; i < elements; ++i) positions.push_back(i);
    return positions;
  }
  for (int i = 0; i < kSamples; ++i)
    positions.push_back(static_cast<int64_t>(ops::input_bits(seed, 0x7fffffffu, static_cast<uint64_t>(i)) %
                                             static_cast<uint64_t>(elements)));
  return positions;
}

SampledOutput sample_output(const void* out, bool integer, int64_t elements, uint64_t seed, Dtype dtype,
                            const std::function<void(const int64_t*, int, double*)>& reference) {
  const std::vector<int64_t> positions = sample_positions(elements, seed);
  const int count = static_cast<int>(positions.size());
  DeviceBuffer device_positions(positions.size() * sizeof(int64_t)), device_values(count * sizeof(double)),
      device_reference(count * sizeof(double));
  TESSERA_CUDA(
      cudaMemcpy(device_positions.get(), positions.data(), device_positions.bytes(), cudaMemcpyHostToDevice));
  const int blocks = (count + 255) / 256;
  const auto* indices = static_cast<const int64_t*>(device_positions.get());
  if (integer) {
    gather<<<blocks, 256>>>(static_cast<const int32_t*>(out), indices, count,
                            static_cast<double*>(device_values.get()));
  } else {
    gather<<<blocks, 256>>>(static_cast<const float*>(out), indices, count,
                            static_cast<double*>(device_values.get()));
  }
  reference(indices, count, static_cast<double*>(device_reference.get()));
  check_launch("sample the output");
  std::vector<double> values(count), exact(count);
  TESSERA_CUDA(cudaMemcpy(values.data(), device_values.get(), device_values.bytes(), cudaMemcpyDeviceToHost));
  TESSERA_CUDA(
      cudaMemcpy(exact.data(), device_reference.get(), device_reference.bytes(), cudaMemcpyDeviceToHost));

  double error_squares = 0, reference_squares = 0, max_abs = 0;
  bool finite = true;
  Json indices_json = Json::array(), samples = Json::array();
  for (int i = 0; i < count; ++i) {
    indices_json.push(positions[i]);
    if (integer) {
      samples.push(static_cast<int64_t>(values[i]));
    } else {
      samples.push(values[i]);
    }
    finite = finite && std::isfinite(values[i]);
    const double difference = std::abs(values[i] - exact[i]);
    max_abs = std::max(max_abs, difference);
    error_squares += difference * difference;
    reference_squares += exact[i] * exact[i];
  }
  const double rel_l2 =
      reference_squares > 0 ? std::sqrt(error_squares / reference_squares) : std::sqrt(error_squares);
  const double tolerance = dtype == Dtype::fp32 ? 1e-5 : 1e-2;
  SampledOutput sampled;
  sampled.pass = finite && (integer ? max_abs == 0 : rel_l2 <= tolerance);
  sampled.output.set("dtype", integer ? "int32" : "fp32")
      .set("elements", elements)
      .set("complete", static_cast<int64_t>(count) == elements)
      .set("indices", indices_json)
      .set("values", samples);
  sampled.self_check.set("reference", "float64 sums of the generator's values, on the GPU")
      .set("max_abs_err", max_abs)
      .set("rel_l2_err", rel_l2)
      .set("pass", sampled.pass);
  return sampled;
}

}  // namespace tessera::gpu
