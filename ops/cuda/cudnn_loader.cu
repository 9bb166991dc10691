#include <dlfcn.h>

#include "ops/cuda/cudnn_loader.hpp"
#include "ops/cuda/runner.hpp"

namespace tessera::gpu::cudnn {

namespace {
template <class F>
bool bind(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  return function != nullptr;
}

Api* open_api(std::string* why) {
  void* library = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    *why = std::string("cuDNN is not on this machine's library path (") + dlerror() + ")";
    return nullptr;
  }
  static Api loaded;
  const bool complete = bind(library, "cudnnCreate", loaded.create) &&
                        bind(library, "cudnnGetErrorString", loaded.error_string) &&
                        bind(library, "cudnnCreateTensorDescriptor", loaded.create_tensor) &&
                        bind(library, "cudnnSetTensor4dDescriptor", loaded.set_tensor_4d) &&
                        bind(library, "cudnnCreateFilterDescriptor", loaded.create_filter) &&
                        bind(library, "cudnnSetFilter4dDescriptor", loaded.set_filter_4d) &&
                        bind(library, "cudnnCreateConvolutionDescriptor", loaded.create_convolution) &&
                        bind(library, "cudnnSetConvolution2dDescriptor", loaded.set_convolution_2d) &&
                        bind(library, "cudnnSetConvolutionGroupCount", loaded.set_group_count) &&
                        bind(library, "cudnnSetConvolutionMathType", loaded.set_math_type) &&
                        bind(library, "cudnnFindConvolutionForwardAlgorithm", loaded.find_forward) &&
                        bind(library, "cudnnConvolutionForward", loaded.forward);
  if (!complete) {
    *why = "libcudnn.so.9 lacks a legacy convolution entry point";
    return nullptr;
  }
  const Status status = loaded.create(&loaded.handle);
  if (status != 0) {
    *why = std::string("cudnnCreate failed: ") + loaded.error_string(status);
    return nullptr;
  }
  Dl_info info{};
  loaded.library = dladdr(reinterpret_cast<void*>(loaded.create), &info) && info.dli_fname ? info.dli_fname
                                                                                           : "libcudnn.so.9";
  return &loaded;
}
}  // namespace

const Api* api(std::string* why) {
  static std::string reason;
  static const Api* opened = open_api(&reason);
  if (!opened && why) *why = reason;
  return opened;
}

void check(Status status, const char* what) {
  if (status == 0) return;
  const Api* loaded = api(nullptr);
  fail(std::string(what) + ": cuDNN status " + std::to_string(status) +
       (loaded ? std::string(" (") + loaded->error_string(status) + ")" : ""));
}

}  // namespace tessera::gpu::cudnn
