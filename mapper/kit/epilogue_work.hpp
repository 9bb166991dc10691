// A contraction's epilogue on the vector unit (issue "Ops as stage graphs", section 4; ops/epilogue.hpp):
// the elementwise chain a gemm, fc or conv2d applies to its output, as one `vec map` per output tile. The
// mapper runs it either fused — on each output tile while it is in SRAM, between the PE array's last
// accumulation and the store, pipelined with the next tile's matmul — or unfused — the contraction stores its
// raw output Z, and after a barrier a vector pass (mapper/kit/vector_stage.hpp) streams Z, the bias row and
// the residual through every core's vector unit into O. An op stored in a narrower type than its
// accumulator's
// (`out: bf16`) has an epilogue even without steps: the tile op rounds the output. Which is faster is the
// cost model's to say, and the simulation's to show: neither is a default.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch/isa/vec_op.hpp"
#include "arch/spec.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

// fused: a vec map on each output tile in SRAM; unfused: a vector pass over the stored output; array: the PE
// array's output path on each finished tile as it drains (core.pe_array.output_steps, a `pe post`).
enum class Fusion : uint8_t { none, fused, unfused, array };
const char* name_of(Fusion fusion);

class EpilogueWork {
 public:
  // The epilogue of a gemm, fc or conv2d op; nullptr when it has none.
  static std::shared_ptr<const EpilogueWork> of(const ops::Op& op);

  const std::vector<arch::VecFn>& chain() const { return chain_; }
  bool bias() const { return bias_; }  // reads the 1 x cols row B
  // Reads a rows x cols tile: the residual R or a SwiGLU's up projection U.
  bool tile() const { return tile_; }
  int64_t rows() const { return rows_; }  // of O
  int64_t cols() const { return cols_; }
  // The partial sums' type (the accumulator's, or the op's 16-bit `psum`): the raw output's and the
  // operands'.
  DType dtype() const { return dtype_; }
  // The type the output is stored in: dtype(), or a narrower one the tile op rounds to (`out: bf16`).
  DType out_dtype() const { return out_dtype_; }
  bool converts() const { return out_dtype_ != dtype_; }
  // No steps: only the rounding to out_dtype() (a chain of one scale by 1; an op's steps never scale).
  bool rounds_only() const { return chain_ == std::vector<arch::VecFn>{arch::VecFn::scale}; }
  std::string text() const;  // "bias+gelu", "bias+gelu->bf16", "->bf16"
  // The vec map of one rows x cols tile of O in SRAM (addresses left to the caller).
  arch::VecOp tile_op(int64_t rows, int64_t cols) const;
  // The steps as a PE array's output path applies them (pe post), when it can: steps of one input (bias and
  // activations, no residual or SwiGLU tile) and no rounding to another type; nullopt otherwise.
  std::optional<std::vector<arch::OutputStep>> output_steps() const;
  // Whether `pe`'s output path runs the whole epilogue.
  bool runs_in(const arch::PeArraySpec& pe) const;

 private:
  std::vector<arch::VecFn> chain_;
  bool bias_ = false, tile_ = false;
  int64_t rows_ = 0, cols_ = 0;
  DType dtype_ = DType::fp32;
  DType out_dtype_ = DType::fp32;
};

}  // namespace tessera::mapper
