// The op kinds tessera ships, one line each: a new kind is its file in ops/kinds/ and a line here. The order
// is the order workload errors list the kinds in.
#include "ops/kinds/attention.hpp"
#include "ops/kinds/conv2d.hpp"
#include "ops/kinds/elementwise.hpp"
#include "ops/kinds/fc.hpp"
#include "ops/kinds/gemm.hpp"
#include "ops/kinds/moe.hpp"
#include "ops/kinds/norm.hpp"
#include "ops/kinds/pool.hpp"
#include "ops/kinds/rope.hpp"
#include "ops/kinds/softmax.hpp"
#include "ops/op_registry.hpp"

namespace tessera::ops {

void register_builtins(OpRegistry& registry) {
  registry.add(make_gemm_kind());
  registry.add(make_conv2d_kind());
  registry.add(make_fc_kind());
  registry.add(make_pool_kind());
  registry.add(make_softmax_kind());
  registry.add(make_layernorm_kind());
  registry.add(make_rmsnorm_kind());
  registry.add(make_elementwise_kind());
  registry.add(make_attention_kind());
  registry.add(make_rope_kind());
  registry.add(make_moe_kind());
}

}  // namespace tessera::ops
