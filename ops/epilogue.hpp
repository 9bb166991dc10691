// A contraction's epilogue (issue "Ops as stage graphs", section 4): a chain of elementwise steps applied to
// its output — `epilogue: [bias, gelu]` on a gemm, fc or conv2d — that the mapper may run on the vector unit
// on each output tile while it is in SRAM (fused) or as a pass over the output in DRAM afterwards (unfused),
// whichever its cost model says is faster. The steps' operands are in the output's (accumulator) type: a bias
// row B [1 x cols], a residual R [rows x cols] of the op's output shape (added), or the up projection U
// [rows x cols] of a SwiGLU gate (`swiglu`: the output becomes silu(output) * U, the op being the gate
// projection, as in Llama's FFN). An epilogue reads at most one such tile: residual or swiglu.
// `out: bf16` (or fp16) stores the output in a narrower type than the accumulator's, rounded once after the
// steps, as a 16-bit accelerator writes its ofmaps: the store moves half the bytes. `psum: fp16` (or bf16)
// keeps the partial sums in 16 bits between the passes over k (a 16-bit accelerator's psum buffers: half the
// SRAM and traffic of fp32 ones), each pass's products summed in fp32 and rounded as they are written back;
// the output is then stored in that type unless `out` says otherwise, and the steps' operands are in it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_kind.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

// An epilogue's steps: the element functions of kInEpilogue (common/element_fn.hpp).
using EpilogueStep = ElementFn;
const std::vector<std::string>& epilogue_step_names();

// The type a contraction stores its output in: its accumulator's (the default), or one it rounds to.
enum class OutputType : uint8_t { accumulator, bf16, fp16, fp32 };
const std::vector<std::string>& output_type_names();

// The type a contraction keeps its partial sums in: its accumulator's (the default), or a 16-bit one.
enum class PartialSumType : uint8_t { accumulator, bf16, fp16 };
const std::vector<std::string>& partial_sum_type_names();

struct Epilogue {
  std::vector<EpilogueStep> steps;  // applied in order
  OutputType out = OutputType::accumulator;
  PartialSumType psum = PartialSumType::accumulator;
  bool empty() const { return steps.empty(); }  // no steps (the output may still be rounded: converts)
  bool has(EpilogueStep step) const;
  bool reads_tile() const { return has(EpilogueStep::residual) || has(EpilogueStep::swiglu); }
  // The 16-bit type partial sums are kept in (`psum`), if any.
  std::optional<DType> partial_sums() const;
  // The type of the partial sums (and of the steps' operands) for operands of `operand` type: the
  // accumulator's, or `psum`.
  DType partials(DType operand) const { return partial_sum_of(operand, partial_sums()); }
  // The output's type (`out`; by default the partial sums'), and whether it differs from the partial sums'.
  DType output(DType operand) const;
  bool converts(DType operand) const { return output(operand) != partials(operand); }
  std::string text() const;  // " +bias+gelu", " ->bf16", " psum=fp16" (empty when none), after an op's shape
};

// The epilogue fields of a contraction kind: `epilogue` (a list of step names; absent: none), `out` (an
// output type; absent: the partial sums') and `psum` (a partial-sum type; absent: the accumulator's).
void visit_epilogue(FieldVisitor& visitor, Epilogue& epilogue);

// Fails an epilogue the operand type cannot take: an int8 contraction's int32 output takes neither steps nor
// an output type; 16-bit partial sums take 16-bit operands; a residual and a SwiGLU are not read together.
void check_epilogue_dtype(const Epilogue& epilogue, DType dtype, const FieldChecks& checks);

// The dtype whose numerics tolerance an output of `operand` operands stored as `output` is held to: the
// coarser of the two (an fp32 GEMM stored as bf16 is as exact as bf16).
DType numerics_dtype(DType operand, DType output);

// The epilogue's operands, appended to an op's inputs (before its output): B (generator slot 2), R (slot 3)
// or U (slot 4).
void add_epilogue_tensors(std::vector<TensorDesc>& tensors, const Epilogue& epilogue, int op_index,
                          DType output, int64_t rows, int64_t cols);

// Applies the steps in float64 to `out` (rows x cols), the operands among `inputs` after the first
// `contraction_inputs` (A and W, or X and W).
void apply_epilogue(const Epilogue& epilogue, std::vector<double>& out, int64_t rows, int64_t cols,
                    const std::vector<HostTensor>& inputs, size_t contraction_inputs);

// The same at one output element (row, col) whose contraction value is `value`, the operands generated.
double apply_epilogue_at(const Epilogue& epilogue, double value, int64_t row, int64_t col, int64_t cols,
                         DType output, uint64_t seed, int op_index);

}  // namespace tessera::ops
