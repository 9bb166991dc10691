// GEMM on the GPU: O[m x n] = A[m x k] * W[k x n] (row-major, as tessera stores them), inputs from the
// counter-based generator (ops/input_generator.hpp) compiled for the device, through cuBLASLt for every
// dtype: fp32 (true fp32, and TF32 for time only), bf16 and fp16 (fp32 output as tessera produces, and 16-bit
// output as frameworks do), int8 -> int32. Row-major is the column-major product O^T = W^T * A^T: cuBLASLt
// gets m' = n, n' = m, k' = k, with W and A as they are.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/device.cuh"
#include "gpu/epilogue.cuh"
#include "gpu/lt_matmul.hpp"

namespace tessera::gpu {

namespace {

// ---- inputs and the exact reference, from the generator

// W[k x n] row-major written as its transpose (n x k row-major): the layout int8 tensor-core GEMMs take.
__global__ void fill_input_transposed(Dtype dtype, uint64_t seed, uint32_t tensor, int64_t rows, int64_t cols,
                                      int8_t* out) {
  const int64_t count = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / cols, col = i % cols;
    out[col * rows + row] = ops::input_int8(seed, tensor, i);
  }
}

// One output element per thread, summed in float64 over the exact operand values: the reference at the
// sampled positions, with no host in the loop.
__global__ void reference_at(Dtype dtype, uint64_t seed, uint32_t a_id, uint32_t w_id, int64_t n, int64_t k,
                             Epilogue epilogue, const int64_t* indices, int count, double* out) {
  const int sample = blockIdx.x * blockDim.x + threadIdx.x;
  if (sample >= count) return;
  const int64_t row = indices[sample] / n, col = indices[sample] % n;
  double sum = 0;
  for (int64_t kk = 0; kk < k; ++kk)
    sum += input_value(dtype, seed, a_id, row * k + kk) * input_value(dtype, seed, w_id, kk * n + col);
  out[sample] = epilogue_reference(epilogue, sum, row, col);
}

// int8 x int8 -> int32 for shapes cuBLASLt's int8 kernels do not take (dimensions not multiples of 4): a
// shared-memory tiled kernel, labelled as such in the record.
constexpr int kTile = 16;
__global__ void int8_gemm_tiled(const int8_t* a, const int8_t* w, int32_t* o, int64_t m, int64_t n,
                                int64_t k) {
  __shared__ int32_t a_tile[kTile][kTile];
  __shared__ int32_t w_tile[kTile][kTile];
  const int64_t row = blockIdx.y * int64_t{kTile} + threadIdx.y,
                col = blockIdx.x * int64_t{kTile} + threadIdx.x;
  int32_t sum = 0;
  for (int64_t base = 0; base < k; base += kTile) {
    a_tile[threadIdx.y][threadIdx.x] =
        (row < m && base + threadIdx.x < k) ? a[row * k + base + threadIdx.x] : 0;
    w_tile[threadIdx.y][threadIdx.x] =
        (col < n && base + threadIdx.y < k) ? w[(base + threadIdx.y) * n + col] : 0;
    __syncthreads();
    for (int i = 0; i < kTile; ++i) sum += a_tile[threadIdx.y][i] * w_tile[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) o[row * n + col] = sum;
}

// ---- cuBLASLt (lt_matmul.hpp) and cuBLAS (device.cuh's cublas_handle)

// How a path stores what.
struct Path {
  std::string name;
  cudaDataType input, output;
  cublasComputeType_t compute;
  bool numerics;        // produces tessera's output type and precision: the one compared and reported
  bool transposed_w;    // W is stored transposed (int8 tensor-core layout)
  bool legacy = false;  // through cuBLAS's cublasGemmEx rather than cuBLASLt (frameworks use both)
};

// Each kind of output once through cuBLASLt and once through cuBLAS (cublasGemmEx): the two libraries choose
// kernels differently, and the record keeps both and reports the fastest that computes tessera's output.
std::vector<Path> paths_for(Dtype dtype) {
  std::vector<Path> lt;
  switch (dtype) {
    case Dtype::fp32:
      lt = {{"cublaslt-fp32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true, false},
            {"cublaslt-tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, false, false}};
      break;
    case Dtype::bf16:
      lt = {{"cublaslt-bf16-fp32out", CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, true, false},
            {"cublaslt-bf16-bf16out", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false, false}};
      break;
    case Dtype::fp16:
      lt = {{"cublaslt-fp16-fp32out", CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true, false},
            {"cublaslt-fp16-fp16out", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, false, false}};
      break;
    case Dtype::int8:
      lt = {{"cublaslt-int8-int32", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, true, true}};
      break;
  }
  std::vector<Path> paths = lt;
  for (Path path : lt) {
    path.name = "cublas-" + path.name.substr(std::string("cublaslt-").size());
    path.legacy = true;
    paths.push_back(path);
  }
  return paths;
}

struct Problem {
  int64_t m, n, k;
  Dtype dtype;
  uint64_t seed;
  uint32_t a_id, w_id;
};

// Copies of A, W (and W transposed for int8) and O, enough of them to span `rotate_bytes`, all holding the
// generator's values: each timed launch reads a copy the last launches did not touch.
struct Operands {
  int copies = 1;
  std::vector<DeviceBuffer> a, w, w_transposed;
  DeviceBuffer out;  // one output, written by every launch (PyTorch's captured calls reuse one block too)
};

Operands make_operands(const Problem& p, size_t output_bytes, size_t rotate_bytes) {
  const size_t element = element_bytes(p.dtype);
  const size_t set_bytes = (p.m * p.k + p.k * p.n) * element + p.m * p.n * output_bytes;
  Operands operands;
  operands.copies = static_cast<int>(std::clamp<size_t>((rotate_bytes + set_bytes - 1) / set_bytes, 1, 64));
  for (int copy = 0; copy < operands.copies; ++copy) {
    operands.a.emplace_back(p.m * p.k * element);
    operands.w.emplace_back(p.k * p.n * element);
    if (copy == 0) operands.out = DeviceBuffer(p.m * p.n * output_bytes);
    if (copy == 0) {
      fill_input<<<grid_for(p.m * p.k), 256>>>(p.dtype, p.seed, p.a_id, p.m * p.k, operands.a[0].get());
      fill_input<<<grid_for(p.k * p.n), 256>>>(p.dtype, p.seed, p.w_id, p.k * p.n, operands.w[0].get());
      check_launch("fill inputs");
    } else {
      TESSERA_CUDA(cudaMemcpy(operands.a[copy].get(), operands.a[0].get(), operands.a[0].bytes(),
                              cudaMemcpyDeviceToDevice));
      TESSERA_CUDA(cudaMemcpy(operands.w[copy].get(), operands.w[0].get(), operands.w[0].bytes(),
                              cudaMemcpyDeviceToDevice));
    }
    if (p.dtype == Dtype::int8) {
      operands.w_transposed.emplace_back(p.k * p.n);
      fill_input_transposed<<<grid_for(p.k * p.n), 256>>>(
          p.dtype, p.seed, p.w_id, p.k, p.n, static_cast<int8_t*>(operands.w_transposed.back().get()));
      check_launch("fill transposed weights");
    }
  }
  return operands;
}

struct GemmState {
  Operands operands;
  LtMatmul matmul;
  EpilogueOperands epilogue;  // a fused epilogue's bias and residuals
};

// Builds one path: its operands, and the library call with its algorithm chosen by device time. With
// `fused`, a cuBLASLt path computes that epilogue in cuBLASLt's (lt_epilogue_of must have one for it).
std::optional<LivePath> build_path(const Problem& p, const Path& path, const RunContext& context,
                                   const std::string* pinned, std::string* note,
                                   const Epilogue* fused = nullptr) {
  auto state = std::make_shared<GemmState>();
  state->operands = make_operands(p, bytes_of(path.output), context.rotate_bytes);
  Operands* operands = &state->operands;
  LivePath live;
  live.state = state;
  live.copies = operands->copies;
  live.output = operands->out.get();
  live.output_at = [operands](int) { return operands->out.get(); };
  if (path.legacy) {
    // Column-major: out (n x m) = first (n x k, or stored k x n and transposed) * A (k x m).
    const bool integer = path.compute == CUBLAS_COMPUTE_32I;
    auto call = [p, path, operands, integer](int copy) {
      const float alpha_f = 1, beta_f = 0;
      const int32_t alpha_i = 1, beta_i = 0;
      return cublasGemmEx(cublas_handle(), path.transposed_w ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N,
                          static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k),
                          integer ? static_cast<const void*>(&alpha_i) : &alpha_f,
                          path.transposed_w ? operands->w_transposed[copy].get() : operands->w[copy].get(),
                          path.input, static_cast<int>(path.transposed_w ? p.k : p.n),
                          operands->a[copy].get(), path.input, static_cast<int>(p.k),
                          integer ? static_cast<const void*>(&beta_i) : &beta_f, operands->out.get(),
                          path.output, static_cast<int>(p.n), path.compute, CUBLAS_GEMM_DEFAULT);
    };
    if (call(0) != CUBLAS_STATUS_SUCCESS) {
      *note = "cuBLAS's cublasGemmEx does not take this shape and type";
      return std::nullopt;
    }
    live.launch = [call, operands](int i) { TESSERA_CUBLAS(call(i % operands->copies)); };
    return live;
  }
  // Column-major: first is n x k (stored k x n when transposed), second k x m, out n x m.
  LtMatmul& matmul = state->matmul;
  const EpilogueOperands* epilogue = nullptr;
  if (fused) {
    state->epilogue = make_epilogue_operands(*fused, output_type_of(path.output), operands->copies);
    epilogue = &state->epilogue;
    matmul.set_epilogue(*lt_epilogue_of(*fused), fused->has(EpilogueStep::residual));
  }
  const bool described = path.transposed_w
                             ? matmul.describe_problem(path.compute, CUBLAS_OP_T, path.input, path.output,
                                                       p.k, p.n, p.k, p.k, p.m, p.k, p.n, p.m, p.n)
                             : matmul.describe_problem(path.compute, CUBLAS_OP_N, path.input, path.output,
                                                       p.n, p.k, p.n, p.k, p.m, p.k, p.n, p.m, p.n);
  if (described) {
    live.launch = [&matmul, operands, epilogue, transposed = path.transposed_w](int i) {
      const int copy = i % operands->copies;
      matmul.run(transposed ? operands->w_transposed[copy].get() : operands->w[copy].get(),
                 operands->a[copy].get(), operands->out.get(), epilogue ? epilogue->bias_data() : nullptr,
                 epilogue ? epilogue->residual_data(copy) : nullptr);
    };
    if (choose_algorithm(matmul, live.launch, live.copies, pinned, live)) return live;
    *note = "no cuBLASLt algorithm the heuristic proposed ran";
    return std::nullopt;
  }
  if (fused) *note = "cuBLASLt has no algorithm with this epilogue for this shape and type";
  if (p.dtype != Dtype::int8 || fused) return std::nullopt;  // no algorithm: the record says so
  // cuBLASLt has no int8 algorithm for this shape (dimensions not multiples of 4): the tiled kernel.
  live.launch = [p, operands](int i) {
    const int copy = i % operands->copies;
    const dim3 grid(static_cast<unsigned>((p.n + kTile - 1) / kTile),
                    static_cast<unsigned>((p.m + kTile - 1) / kTile));
    int8_gemm_tiled<<<grid, dim3(kTile, kTile), 0, work_stream()>>>(
        static_cast<const int8_t*>(operands->a[copy].get()),
        static_cast<const int8_t*>(operands->w[copy].get()), static_cast<int32_t*>(operands->out.get()), p.m,
        p.n, p.k);
  };
  live.chosen = "cuBLASLt has no int8 algorithm for this shape: the runner's shared-memory tiled kernel";
  return live;
}

// A gemm (m, n, k) or an fc layer (batch, inputs, outputs: the GEMM m = batch, n = outputs, k = inputs).
OpMeasurement run_gemm(const OpArgs& args, const RunContext& context) {
  const bool fc = args.get("kind") == "fc";
  Problem p;
  p.m = fc ? args.integer("batch") : args.integer("m");
  p.n = args.integer(fc ? "outputs" : "n");
  p.k = args.integer(fc ? "inputs" : "k");
  p.dtype = parse_dtype(args.get("dtype"));
  p.seed = static_cast<uint64_t>(args.integer("seed"));
  const uint32_t index = static_cast<uint32_t>(args.integer("index"));
  p.a_id = ops::tensor_id(index, 0);
  p.w_id = ops::tensor_id(index, 1);
  const Epilogue epilogue = parse_epilogue(args, p.m, p.n);
  // Inputs once (an epilogue's bias row and residual in the output type too).
  auto input_bytes_with = [&](size_t output_bytes) {
    return static_cast<double>((p.m * p.k + p.k * p.n) * element_bytes(p.dtype)) +
           static_cast<double>(output_bytes) *
               ((epilogue.has(EpilogueStep::bias) ? p.n : 0) +
                (epilogue.has(EpilogueStep::residual) || epilogue.has(EpilogueStep::swiglu) ? p.m * p.n : 0));
  };

  OpSpec spec;
  spec.kind = args.get("kind");
  spec.name = args.get("name");
  spec.op.set("kind", spec.kind).set("name", spec.name).set("index", static_cast<int64_t>(index));
  if (fc) spec.op.set("batch", p.m).set("inputs", p.k).set("outputs", p.n);
  spec.op.set("m", p.m)
      .set("n", p.n)
      .set("k", p.k)
      .set("dtype", args.get("dtype"))
      .set("seed", static_cast<int64_t>(p.seed));
  if (!epilogue.empty()) spec.op.set("epilogue", args.get("epilogue"));
  spec.seed = p.seed;
  spec.out_elements = p.m * p.n;
  spec.work = 2.0 * p.m * p.n * p.k;
  spec.rate_kind = rate_kind_of(p.dtype);
  spec.bytes = input_bytes_with(4) + static_cast<double>(p.m * p.n * 4);
  spec.reference = [p, epilogue](const int64_t* positions, int count, double* out) {
    reference_at<<<(count + 255) / 256, 256>>>(p.dtype, p.seed, p.a_id, p.w_id, p.n, p.k, epilogue, positions,
                                               count, out);
  };
  // With an epilogue, every path is the contraction and then the runner's epilogue kernel (unfused, as a
  // framework's eager chain runs), and each cuBLASLt path also computes it in cuBLASLt's epilogue (fused)
  // where cuBLASLt has those steps.
  for (const Path& path : paths_for(p.dtype)) {
    for (const std::string& form : epilogue_forms(epilogue, !path.legacy)) {
      PathSpec path_spec;
      path_spec.name = epilogue_path_name(path.name, form);
      path_spec.fusion = form;
      path_spec.numerics = path.numerics;
      path_spec.output = output_type_of(path.output);
      path_spec.tolerance = tolerance_for(path_spec.output, p.dtype != Dtype::fp32,
                                          path.compute == CUBLAS_COMPUTE_32F_FAST_TF32);
      path_spec.bytes =
          input_bytes_with(bytes_of(path.output)) + static_cast<double>(p.m * p.n * bytes_of(path.output));
      path_spec.build = [p, path, form, epilogue, name = spec.name, spec_name = path_spec.name](
                            const RunContext& run, std::string* note) {
        return build_epilogue_form(form, epilogue, output_type_of(path.output), [&](const Epilogue* fused) {
          return build_path(p, path, run, run.pinned_choice(name, spec_name), note, fused);
        });
      };
      spec.paths.push_back(path_spec);
    }
  }
  return measure_op(spec, context);
}

}  // namespace

void register_gemm() {
  op_registry()["gemm"] = run_gemm;
  op_registry()["fc"] = run_gemm;
}

void measure_matmul_ceilings(RunContext& context) {
  // 8192^3 on the generator's inputs: large enough to fill the chip; each kind the better of cuBLASLt and
  // cuBLAS, by device time.
  constexpr int64_t kSize = 8192;
  struct Kind {
    const char* name;
    Dtype dtype;
    Path path;
  };
  const std::vector<Kind> kinds = {{"bf16", Dtype::bf16, paths_for(Dtype::bf16)[1]},
                                   {"fp16", Dtype::fp16, paths_for(Dtype::fp16)[1]},
                                   {"tf32", Dtype::fp32, paths_for(Dtype::fp32)[1]},
                                   {"fp32", Dtype::fp32, paths_for(Dtype::fp32)[0]},
                                   {"int8", Dtype::int8, paths_for(Dtype::int8)[0]}};
  RunContext ceiling_context = context;
  ceiling_context.rotate_bytes = 0;
  ceiling_context.pinned.clear();
  for (const Kind& kind : kinds) {
    Path legacy = kind.path;
    legacy.legacy = true;
    double best = 0;
    for (const Path& path : {kind.path, legacy}) {
      const Problem p{kSize, kSize, kSize, kind.dtype, 1, 0, 1};
      std::string note;
      const std::optional<LivePath> live = build_path(p, path, ceiling_context, nullptr, &note);
      if (!live) continue;
      const EagerTiming eager = time_eager(live->launch);
      const DeviceTiming device = time_device(live->launch, live->copies, eager.median_us);
      best = std::max(best, 2.0 * kSize * kSize * kSize / (device.median_us * 1e6));
    }
    context.ceilings.matmul_tflops[kind.name] = best;
  }
}

}  // namespace tessera::gpu
