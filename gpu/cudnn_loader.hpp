// cuDNN, where the GPU machine has it, opened at run time: the runner must build with the CUDA toolkit alone,
// and cuDNN is a separate library (on the lent H200 it comes with PyTorch, without headers). The entry points
// the conv paths use are declared here with the C ABI of cuDNN 9 (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h):
// the legacy API's few, and the graph (backend) API's seven, whose attribute names and values follow.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera::gpu::cudnn {

using Handle = void*;
using TensorDescriptor = void*;
using FilterDescriptor = void*;
using ConvolutionDescriptor = void*;
using BackendDescriptor = void*;
using Status = int;  // cudnnStatus_t; 0 is CUDNN_STATUS_SUCCESS

// Enum values of cuDNN 9.
enum DataType : int { kFloat = 0, kHalf = 2, kInt8 = 3, kInt32 = 4, kBfloat16 = 9 };
enum TensorFormat : int { kNhwc = 1 };
enum ConvolutionMode : int { kCrossCorrelation = 1 };
enum MathType : int { kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3 };

struct AlgorithmPerf {  // cudnnConvolutionFwdAlgoPerf_t
  int algorithm;
  Status status;
  float time_ms;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

// The graph API's names and values (cudnn_graph.h of cuDNN 9: cudnnBackendDescriptorType_t,
// cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, cudnnBackendHeurMode_t and the notes).
namespace graph {
enum DescriptorType : int {
  kConvolution = 1,
  kEngine = 2,
  kEngineConfig = 3,
  kEngineHeuristics = 4,
  kExecutionPlan = 5,
  kKnobChoice = 7,
  kConvolutionForward = 10,
  kOperationGraph = 15,
  kVariantPack = 16,
  kTensor = 17,
};
enum Attribute : int {
  kConvolutionComputeType = 100,
  kConvolutionMode = 101,
  kConvolutionDilations = 102,
  kConvolutionFilterStrides = 103,
  kConvolutionPostPaddings = 104,
  kConvolutionPrePaddings = 105,
  kConvolutionSpatialDims = 106,
  kHeuristicsMode = 200,
  kHeuristicsOperationGraph = 201,
  kHeuristicsResults = 202,
  kEngineConfigEngine = 300,
  kEngineConfigKnobChoices = 302,
  kPlanHandle = 400,  // deprecated in later cuDNN 9 releases, read by the earlier ones
  kPlanEngineConfig = 401,
  kPlanWorkspaceSize = 402,
  kKnobChoiceType = 600,
  kKnobChoiceValue = 601,
  kForwardAlpha = 700,
  kForwardBeta = 701,
  kForwardConvolution = 702,
  kForwardW = 703,
  kForwardX = 704,
  kForwardY = 705,
  kOperationGraphHandle = 800,  // likewise
  kOperationGraphOps = 801,
  kTensorByteAlignment = 900,
  kTensorDataType = 901,
  kTensorDimensions = 902,
  kTensorStrides = 903,
  kTensorUniqueId = 906,
  kVariantPackUniqueIds = 1000,
  kVariantPackDataPointers = 1001,
  kVariantPackWorkspace = 1003,
  kEngineGlobalIndex = 1301,
  kEngineNumericalNote = 1303,
  kEngineBehaviorNote = 1305,
};
enum AttributeType : int {
  kTypeHandle = 0,
  kTypeDataType = 1,
  kTypeInt64 = 3,
  kTypeFloat = 4,
  kTypeVoidPointer = 6,
  kTypeConvolutionMode = 7,
  kTypeHeuristicsMode = 8,
  kTypeKnobType = 9,
  kTypeNumericalNote = 11,
  kTypeBackendDescriptor = 15,
  kTypeBehaviorNote = 19,
};
enum HeuristicsMode : int { kModeInstant = 0, kModeB = 1, kModeFallback = 2, kModeA = 3 };
enum NumericalNote : int {
  kNoteTensorCore = 0,
  kNoteDownConvertInputs = 1,
  kNoteReducedPrecisionReduction = 2,
  kNoteFft = 3,
  kNoteWinograd = 5,
};
enum BehaviorNote : int {
  kNoteRuntimeCompilation = 0,
  kNoteRequiresFilterReorder = 1,
  kNoteRequiresBiasReorder = 2
};
}  // namespace graph

struct Api {
  Status (*create)(Handle*);
  const char* (*error_string)(Status);
  Status (*create_tensor)(TensorDescriptor*);
  Status (*set_tensor_4d)(TensorDescriptor, int format, int type, int n, int c, int h, int w);
  Status (*create_filter)(FilterDescriptor*);
  Status (*set_filter_4d)(FilterDescriptor, int type, int format, int k, int c, int h, int w);
  Status (*create_convolution)(ConvolutionDescriptor*);
  Status (*set_convolution_2d)(ConvolutionDescriptor, int pad_h, int pad_w, int stride_h, int stride_w,
                               int dilation_h, int dilation_w, int mode, int compute_type);
  Status (*set_stream)(Handle, cudaStream_t);
  Status (*set_group_count)(ConvolutionDescriptor, int);
  Status (*set_math_type)(ConvolutionDescriptor, int);
  Status (*find_forward)(Handle, TensorDescriptor, FilterDescriptor, ConvolutionDescriptor, TensorDescriptor,
                         int requested, int* returned, AlgorithmPerf*);
  Status (*forward)(Handle, const void* alpha, TensorDescriptor, const void* x, FilterDescriptor,
                    const void* w, ConvolutionDescriptor, int algorithm, void* workspace,
                    size_t workspace_bytes, const void* beta, TensorDescriptor, void* y);
  // The graph API (present in every cuDNN 9; `graph_missing` says why not when absent).
  Status (*create_descriptor)(int type, BackendDescriptor*) = nullptr;
  Status (*destroy_descriptor)(BackendDescriptor) = nullptr;
  Status (*finalize)(BackendDescriptor) = nullptr;
  Status (*set_attribute)(BackendDescriptor, int name, int type, int64_t count, const void* values) = nullptr;
  Status (*get_attribute)(BackendDescriptor, int name, int type, int64_t requested, int64_t* count,
                          void* values) = nullptr;
  Status (*execute)(Handle, BackendDescriptor plan, BackendDescriptor variant_pack) = nullptr;
  void (*last_error)(char* message, size_t bytes) = nullptr;  // cudnnGetLastErrorString, where present
  size_t (*version)() = nullptr;                              // cudnnGetVersion
  bool graph = false;
  std::string graph_missing;
  Handle handle = nullptr;
  std::string library;  // what was opened
};

// The API when libcudnn.so.9 can be opened and has every entry point, else nullptr; `why` says what failed.
const Api* api(std::string* why);

// Throws through fail() with cuDNN's message when `status` is not success.
void check(Status status, const char* what);

// "<what>: cuDNN status N (message; cuDNN's last error text where it keeps one)".
std::string describe(Status status, const std::string& what);

// The library opened and its version, for the records: "/path/libcudnn.so.9 (9.10.2)".
std::string library_text();

}  // namespace tessera::gpu::cudnn
