#include <dlfcn.h>

#include "gpu/cudnn_loader.hpp"
#include "gpu/runner.hpp"

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
                        bind(library, "cudnnSetStream", loaded.set_stream) &&
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
  loaded.graph = bind(library, "cudnnBackendCreateDescriptor", loaded.create_descriptor) &&
                 bind(library, "cudnnBackendDestroyDescriptor", loaded.destroy_descriptor) &&
                 bind(library, "cudnnBackendFinalize", loaded.finalize) &&
                 bind(library, "cudnnBackendSetAttribute", loaded.set_attribute) &&
                 bind(library, "cudnnBackendGetAttribute", loaded.get_attribute) &&
                 bind(library, "cudnnBackendExecute", loaded.execute);
  if (!loaded.graph) loaded.graph_missing = "libcudnn.so.9 lacks a graph (backend) API entry point";
  bind(library, "cudnnGetLastErrorString", loaded.last_error);
  bind(library, "cudnnGetVersion", loaded.version);
  const Status status = loaded.create(&loaded.handle);
  if (status != 0) {
    *why = std::string("cudnnCreate failed: ") + loaded.error_string(status);
    return nullptr;
  }
  // Every call runs on the runner's stream, where graphs are captured.
  if (loaded.set_stream(loaded.handle, work_stream()) != 0) {
    *why = "cudnnSetStream failed";
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

std::string describe(Status status, const std::string& what) {
  const Api* loaded = api(nullptr);
  std::string text = what + ": cuDNN status " + std::to_string(status);
  if (!loaded) return text;
  text += std::string(" (") + loaded->error_string(status);
  if (loaded->last_error) {
    char message[512] = "";
    loaded->last_error(message, sizeof message);
    if (message[0] != '\0') text += std::string("; ") + message;
  }
  return text + ")";
}

void check(Status status, const char* what) {
  if (status != 0) fail(describe(status, what));
}

std::string library_text() {
  std::string why;
  const Api* loaded = api(&why);
  if (!loaded) return "absent: " + why;
  if (!loaded->version) return loaded->library;
  const size_t version = loaded->version();  // major * 10000 + minor * 100 + patch in cuDNN 9
  return loaded->library + " (" + std::to_string(version / 10000) + "." +
         std::to_string(version / 100 % 100) + "." + std::to_string(version % 100) + ")";
}

}  // namespace tessera::gpu::cudnn
