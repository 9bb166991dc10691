#include "gpu/op_fields.hpp"

#include <algorithm>

namespace tessera::gpu {

namespace {

RunnerField required(const char* name) {
  return RunnerField{name, true, ""};
}
RunnerField optional(const char* name, const char* fallback) {
  return RunnerField{name, false, fallback};
}

// The contractions' `out` and `psum` are read by session.cu: an op asking for a narrower output or 16-bit
// partial sums is recorded as having no GPU path. Their sparsity is not the GPU's concern:
const char* const kDensity =
    "density.input: the GPU computes dense; density changes only what a run-length coded DRAM moves";
const char* const kDensityOut =
    "density.output: the GPU computes dense; density changes only what a run-length coded DRAM moves";

std::vector<RunnerKind> make_kinds() {
  const RunnerField out = optional("out", "accumulator"), psum = optional("psum", "accumulator");
  const RunnerField epilogue = optional("epilogue", "");
  std::vector<RunnerKind> kinds;
  kinds.push_back(
      {"gemm", {required("m"), required("n"), required("k"), epilogue, out, psum}, {kDensity, kDensityOut}});
  kinds.push_back({"fc",
                   {optional("batch", "1"), required("inputs"), required("outputs"), epilogue, out, psum},
                   {kDensity, kDensityOut}});
  kinds.push_back({"conv2d",
                   {optional("n", "1"), required("c"), required("h"), required("w"), required("k"),
                    required("r"), required("s"), optional("stride", "1"), optional("pad", "0"),
                    optional("dilation", "1"), optional("groups", "1"), epilogue, out, psum},
                   {kDensity, kDensityOut}});
  kinds.push_back({"pool",
                   {optional("n", "1"), required("c"), required("h"), required("w"), required("r"),
                    required("s"), optional("stride", "1"), optional("pad", "0"), required("mode")},
                   {}});
  kinds.push_back({"elementwise", {required("rows"), required("cols"), required("fn")}, {}});
  kinds.push_back({"softmax",
                   {required("rows"), required("cols"), optional("scale", "1"), optional("causal", "false")},
                   {}});
  kinds.push_back(
      {"layernorm",
       {required("rows"), required("cols"), optional("eps", "1e-05"), optional("residual", "false")},
       {}});
  kinds.push_back(
      {"rmsnorm",
       {required("rows"), required("cols"), optional("eps", "1e-06"), optional("residual", "false")},
       {}});
  kinds.push_back(
      {"attention",
       {optional("batch", "1"), required("heads"), required("kv_heads"), required("seq_q"),
        required("seq_kv"), required("head_dim"), optional("causal", "false"), optional("scale", "0"),
        optional("kv_cache.layout", "contiguous"), optional("kv_cache.block_tokens", "16"),
        optional("kv_cache.order", "bhsd"), optional("kv_cache.blocks", "0")},
       {}});
  kinds.push_back({"rope",
                   {optional("batch", "1"), required("seq"), required("heads"), required("head_dim"),
                    optional("rotary_dim", "0"), optional("position", "0"), optional("base", "10000"),
                    optional("style", "half")},
                   {}});
  kinds.push_back(
      {"moe",
       {required("tokens"), required("hidden"), required("ffn"), required("experts"), required("top_k"),
        optional("capacity_factor", "0"), optional("shared_experts", "0"), optional("activation", "swiglu"),
        optional("routing.scoring", "softmax"), optional("routing.groups", "1"),
        optional("routing.topk_groups", "1"), optional("routing.routed_scaling", "1"),
        optional("routing.skew", "none"), optional("routing.alpha", "1.2"), optional("routing.counts", "")},
       {}});
  return kinds;
}

}  // namespace

const std::vector<RunnerKind>& runner_kinds() {
  static const std::vector<RunnerKind> kinds = make_kinds();
  return kinds;
}

const RunnerKind* runner_kind(const std::string& kind) {
  const auto& kinds = runner_kinds();
  const auto found =
      std::find_if(kinds.begin(), kinds.end(), [&](const RunnerKind& entry) { return entry.kind == kind; });
  return found == kinds.end() ? nullptr : &*found;
}

const RunnerField* runner_field(const std::string& kind, const std::string& name) {
  const RunnerKind* entry = runner_kind(kind);
  if (!entry) return nullptr;
  const auto found = std::find_if(entry->fields.begin(), entry->fields.end(),
                                  [&](const RunnerField& field) { return field.name == name; });
  return found == entry->fields.end() ? nullptr : &*found;
}

bool is_common_key(const std::string& key) {
  return key == "kind" || key == "name" || key == "index" || key == "seed" || key == "dtype";
}

}  // namespace tessera::gpu
