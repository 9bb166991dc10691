// One cuBLASLt matmul (optionally strided-batched), described once, with the heuristic's best few algorithms
// as candidates and the one run chosen by device time (gemm.cu's paths, conv.cu's im2col GEMMs).
#pragma once

#include <cublasLt.h>

#include <string>
#include <vector>

#include "gpu/measure.hpp"
#include "gpu/runner.hpp"

namespace tessera::gpu {

class LtMatmul {
 public:
  LtMatmul() = default;
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  // Column-major: out (c_rows x c_cols, leading dimension c_ld) = op(a) * b, with `batch` strided copies
  // (offsets in elements of a, b, c) and the operands' start alignments (bytes of a, b, c, d) where they are
  // less than cudaMalloc's. Returns false when cuBLASLt has no algorithm for it.
  bool describe_problem(cublasComputeType_t compute, cublasOperation_t transpose_a, cudaDataType input,
                        cudaDataType output, int64_t a_rows, int64_t a_cols, int64_t a_ld, int64_t b_rows,
                        int64_t b_cols, int64_t b_ld, int64_t c_rows, int64_t c_cols, int64_t c_ld,
                        int32_t batch = 1, const int64_t* offsets = nullptr,
                        const uint32_t* alignments = nullptr);
  // Before describe_problem: D = epilogue(op(a) * b + C + bias) with cuBLASLt's epilogue `kind` (the bias,
  // when it has one, in the output type) and, with `residual`, C read from the residual run() is given (beta
  // 1).
  void set_epilogue(cublasLtEpilogue_t kind, bool residual) {
    epilogue_ = kind;
    residual_ = residual;
  }
  int candidates() const { return static_cast<int>(candidates_.size()); }
  void select(int candidate) { selected_ = candidate; }
  int selected() const { return selected_; }
  std::string selected_text() const;  // "algo 21 tile 18 stages 30 split-k 1"
  void run(const void* a, const void* b, void* out, const void* bias = nullptr,
           const void* residual = nullptr) const;

 private:
  cublasLtMatmulDesc_t operation_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, c_layout_ = nullptr;
  std::vector<cublasLtMatmulAlgo_t> candidates_;
  int selected_ = 0;
  DeviceBuffer workspace_;
  bool int_scale_ = false;
  cublasLtEpilogue_t epilogue_ = CUBLASLT_EPILOGUE_DEFAULT;
  bool residual_ = false;
};

// Selects the matmul's candidate that `launch` runs: the pinned one ("heuristic N"), else the fastest by
// device time; fills path.chosen, path.choice and path.algorithms_tried. False when none ran.
bool choose_algorithm(LtMatmul& matmul, const Launch& launch, int copies, const std::string* pinned,
                      LivePath& path);

}  // namespace tessera::gpu
