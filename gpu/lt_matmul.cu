#include "gpu/lt_matmul.hpp"

#include <cstdlib>

#include "gpu/device.cuh"

namespace tessera::gpu {

namespace {

constexpr size_t kWorkspaceBytes = 64u << 20;
// cuBLASLt's best few for the shape, each timed on the device. Up to 24 are asked for; on the H200 (cuBLAS
// 13) the heuristic returned 8 for every shipped shape, so the records say "of 8".
constexpr int kHeuristicAlgorithms = 24;

// A cuBLASLt algorithm in words: its id, tile, stages and split-k, as cublasLtMatmulAlgoConfigGetAttribute
// reads them.
std::string describe(const cublasLtMatmulAlgo_t& algorithm) {
  int id = 0, tile = 0, stages = 0, split_k = 1;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algorithm, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algorithm, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algorithm, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algorithm, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k, sizeof split_k,
                                       &written);
  return "algo " + std::to_string(id) + " tile " + std::to_string(tile) + " stages " +
         std::to_string(stages) + " split-k " + std::to_string(split_k);
}

}  // namespace

LtMatmul::~LtMatmul() {
  if (operation_) cublasLtMatmulDescDestroy(operation_);
  for (auto layout : {a_layout_, b_layout_, c_layout_})
    if (layout) cublasLtMatrixLayoutDestroy(layout);
}

bool LtMatmul::describe_problem(cublasComputeType_t compute, cublasOperation_t transpose_a,
                                cudaDataType input, cudaDataType output, int64_t a_rows, int64_t a_cols,
                                int64_t a_ld, int64_t b_rows, int64_t b_cols, int64_t b_ld, int64_t c_rows,
                                int64_t c_cols, int64_t c_ld, int32_t batch, const int64_t* offsets,
                                const uint32_t* alignments) {
  int_scale_ = compute == CUBLAS_COMPUTE_32I;
  TESSERA_CUBLAS(cublasLtMatmulDescCreate(&operation_, compute, int_scale_ ? CUDA_R_32I : CUDA_R_32F));
  const cublasOperation_t keep = CUBLAS_OP_N;
  TESSERA_CUBLAS(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose_a,
                                                sizeof transpose_a));
  TESSERA_CUBLAS(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  if (epilogue_ != CUBLASLT_EPILOGUE_DEFAULT)
    TESSERA_CUBLAS(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue_,
                                                  sizeof epilogue_));
  TESSERA_CUBLAS(cublasLtMatrixLayoutCreate(&a_layout_, input, a_rows, a_cols, a_ld));
  TESSERA_CUBLAS(cublasLtMatrixLayoutCreate(&b_layout_, input, b_rows, b_cols, b_ld));
  TESSERA_CUBLAS(cublasLtMatrixLayoutCreate(&c_layout_, output, c_rows, c_cols, c_ld));
  if (batch > 1) {
    cublasLtMatrixLayout_t layouts[3] = {a_layout_, b_layout_, c_layout_};
    for (int i = 0; i < 3; ++i) {
      TESSERA_CUBLAS(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                      sizeof batch));
      TESSERA_CUBLAS(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                      &offsets[i], sizeof offsets[i]));
    }
  }
  cublasLtMatmulPreference_t preference;
  TESSERA_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
  const size_t workspace = kWorkspaceBytes;
  TESSERA_CUBLAS(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace, sizeof workspace));
  if (alignments) {
    const cublasLtMatmulPreferenceAttributes_t keys[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; ++i)
      TESSERA_CUBLAS(
          cublasLtMatmulPreferenceSetAttribute(preference, keys[i], &alignments[i], sizeof alignments[i]));
  }
  cublasLtMatmulHeuristicResult_t results[kHeuristicAlgorithms] = {};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(lt_handle(), operation_, a_layout_, b_layout_, c_layout_, c_layout_,
                                     preference, kHeuristicAlgorithms, results, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) return false;
  for (int i = 0; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS) candidates_.push_back(results[i].algo);
  if (candidates_.empty()) return false;
  workspace_ = DeviceBuffer(kWorkspaceBytes);
  return true;
}

std::string LtMatmul::selected_text() const {
  return describe(candidates_.at(selected_));
}

void LtMatmul::run(const void* a, const void* b, void* out, const void* bias, const void* residual) const {
  const float alpha_f = 1, beta_f = residual_ ? 1.0f : 0.0f;
  const int32_t alpha_i = 1, beta_i = 0;
  const void* alpha = int_scale_ ? static_cast<const void*>(&alpha_i) : &alpha_f;
  const void* beta = int_scale_ ? static_cast<const void*>(&beta_i) : &beta_f;
  if (bias)
    TESSERA_CUBLAS(
        cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  if (residual_ && !residual) fail("a matmul described with a residual ran without one");
  TESSERA_CUBLAS(cublasLtMatmul(
      lt_handle(), operation_, alpha, a, a_layout_, b, b_layout_, beta, residual_ ? residual : out, c_layout_,
      out, c_layout_, &candidates_.at(selected_), workspace_.get(), workspace_.bytes(), work_stream()));
}

bool choose_algorithm(LtMatmul& matmul, const Launch& launch, int copies, const std::string* pinned,
                      LivePath& path) {
  if (pinned) {
    const std::string prefix = "heuristic ";
    if (pinned->rfind(prefix, 0) != 0) return false;
    const int index = std::atoi(pinned->c_str() + prefix.size());
    if (index < 0 || index >= matmul.candidates()) return false;
    matmul.select(index);
    path.chosen =
        "cuBLASLt heuristic result " + std::to_string(index) + " (" + matmul.selected_text() + "), as pinned";
  } else {
    std::vector<double> times;
    const int best = fastest_candidate(
        matmul.candidates(),
        [&](int i) {
          matmul.select(i);
          return true;
        },
        launch, copies, &times);
    if (best < 0) return false;
    path.algorithms_tried = matmul.candidates();
    path.chosen = "cuBLASLt heuristic result " + std::to_string(best) + " of " +
                  std::to_string(matmul.candidates()) + " (" + matmul.selected_text() +
                  "), fastest by device time (us, in order: " + times_text(times) + ")";
  }
  path.choice = "heuristic " + std::to_string(matmul.selected());
  return true;
}

}  // namespace tessera::gpu
