#include "mapper/kit/epilogue_work.hpp"

#include "arch/isa/pe_post.hpp"
#include "ops/kinds/conv2d.hpp"
#include "ops/kinds/fc.hpp"
#include "ops/kinds/gemm.hpp"

namespace tessera::mapper {

const char* name_of(Fusion fusion) {
  switch (fusion) {
    case Fusion::none:
      return "none";
    case Fusion::fused:
      return "fused";
    case Fusion::unfused:
      return "unfused";
    case Fusion::array:
      return "array";
  }
  return "?";
}

namespace {
// A residual is the chain's add of its tile; every other step is its own.
arch::VecFn vec_fn_of(ops::EpilogueStep step) {
  return step == ElementFn::residual ? ElementFn::add : step;
}
}  // namespace

std::shared_ptr<const EpilogueWork> EpilogueWork::of(const ops::Op& op) {
  const ops::Epilogue* epilogue = nullptr;
  int64_t rows = 0, cols = 0;
  if (const auto* gemm = op.as<ops::GemmShape>()) {
    epilogue = &gemm->epilogue, rows = gemm->m, cols = gemm->n;
  } else if (const auto* fc = op.as<ops::FcShape>()) {
    epilogue = &fc->epilogue, rows = fc->batch, cols = fc->outputs;
  } else if (const auto* conv = op.as<ops::ConvShape>()) {
    epilogue = &conv->epilogue, rows = conv->n * conv->p() * conv->q(), cols = conv->k;
  }
  if (!epilogue || (epilogue->empty() && !epilogue->converts(op.dtype))) return nullptr;
  auto work = std::make_shared<EpilogueWork>();
  for (ops::EpilogueStep step : epilogue->steps) work->chain_.push_back(vec_fn_of(step));
  // Rounding alone is a pass of x * 1 (as the MoE and attention lowerings round their fp32 tiles).
  if (work->chain_.empty()) work->chain_ = {arch::VecFn::scale};
  work->bias_ = epilogue->has(ops::EpilogueStep::bias);
  work->tile_ = epilogue->reads_tile();
  work->rows_ = rows, work->cols_ = cols;
  work->dtype_ = epilogue->partials(op.dtype);
  work->out_dtype_ = epilogue->output(op.dtype);
  return work;
}

std::string EpilogueWork::text() const {
  std::string text;
  for (arch::VecFn fn : chain_) {
    if (fn == arch::VecFn::scale) continue;  // the rounding pass's x * 1
    text +=
        (text.empty() ? "" : "+") + std::string(name_of(fn == arch::VecFn::add ? ElementFn::residual : fn));
  }
  if (converts()) text += std::string("->") + name_of(out_dtype_);
  return text;
}

arch::VecOp EpilogueWork::tile_op(int64_t rows, int64_t cols) const {
  arch::VecOp op = arch::VecOp::on_tile(arch::VectorKind::map, dtype_, out_dtype_, rows, cols);
  op.chain = chain_;
  return op;
}

std::optional<std::vector<arch::OutputStep>> EpilogueWork::output_steps() const {
  if (converts() || tile_) return std::nullopt;
  for (arch::VecFn fn : chain_)
    if (!usable_in(fn, kInOutputPath)) return std::nullopt;
  return chain_;
}

bool EpilogueWork::runs_in(const arch::PeArraySpec& pe) const {
  const std::optional<std::vector<arch::OutputStep>> steps = output_steps();
  return steps && !pe.output_steps.empty() && arch::output_path_applies(pe.output_steps, *steps);
}

}  // namespace tessera::mapper
