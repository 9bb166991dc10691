// cuDNN, where the GPU machine has it, opened at run time: the runner must build with the CUDA toolkit alone,
// and cuDNN is a separate library (on the lent H200 it comes with PyTorch). The few legacy-API entry points
// the conv path uses are declared here with the C ABI of cuDNN 9 (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace tessera::gpu::cudnn {

using Handle = void*;
using TensorDescriptor = void*;
using FilterDescriptor = void*;
using ConvolutionDescriptor = void*;
using Status = int;  // cudnnStatus_t; 0 is CUDNN_STATUS_SUCCESS

// Enum values of cuDNN 9.
enum DataType : int { kFloat = 0, kHalf = 2, kBfloat16 = 9 };
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
  Status (*set_group_count)(ConvolutionDescriptor, int);
  Status (*set_math_type)(ConvolutionDescriptor, int);
  Status (*find_forward)(Handle, TensorDescriptor, FilterDescriptor, ConvolutionDescriptor, TensorDescriptor,
                         int requested, int* returned, AlgorithmPerf*);
  Status (*forward)(Handle, const void* alpha, TensorDescriptor, const void* x, FilterDescriptor,
                    const void* w, ConvolutionDescriptor, int algorithm, void* workspace,
                    size_t workspace_bytes, const void* beta, TensorDescriptor, void* y);
  Handle handle = nullptr;
  std::string library;  // what was opened
};

// The API when libcudnn.so.9 can be opened and has every entry point, else nullptr; `why` says what failed.
const Api* api(std::string* why);

// Throws through fail() with cuDNN's message when `status` is not success.
void check(Status status, const char* what);

}  // namespace tessera::gpu::cudnn
