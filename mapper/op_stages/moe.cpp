// moe's decomposition (issue 12: router GEMM, softmax + top-k, permute, ragged grouped GEMMs, combine) is the
// issue's next step; until then a moe op is a located error rather than a layer silently left out of a run.
#include <fmt/format.h>

#include "common/error.hpp"
#include "mapper/op_stages/decompositions.hpp"

namespace tessera::mapper {

OpStages moe_stages(const ops::Op& op, const arch::ArchSpec&, const std::vector<arch::Dataflow>&) {
  throw InputError(op.where, op.name,
                   fmt::format("{} (moe {} {}): MoE layers are not mapped yet: tessera has their operator, "
                               "routing and CPU reference, but no stages for them",
                               op.name, op.shape_text(), name_of(op.dtype)),
                   "`tessera validate` checks a moe workload; map and run the layer's other ops without it");
}

}  // namespace tessera::mapper
