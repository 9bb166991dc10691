#include "gpu/device.cuh"
#include "gpu/measure.hpp"

namespace tessera::gpu {

namespace {
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

cublasHandle_t cublas_handle() {
  static DeviceBuffer workspace(size_t{64} << 20);
  static cublasHandle_t handle = [] {
    cublasHandle_t created;
    TESSERA_CUBLAS(cublasCreate(&created));
    TESSERA_CUBLAS(cublasSetStream(created, work_stream()));
    // A workspace of its own, so that a graph capture never needs cuBLAS to allocate one.
    TESSERA_CUBLAS(cublasSetWorkspace(created, workspace.get(), workspace.bytes()));
    return created;
  }();
  return handle;
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

}  // namespace tessera::gpu
