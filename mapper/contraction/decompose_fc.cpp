// fc: the GEMM m = batch, k = inputs, n = outputs (mapper/contraction/matmul_forms.hpp).
#include "mapper/contraction/matmul_forms.hpp"
#include "mapper/decompositions.hpp"
#include "ops/kinds/fc.hpp"

namespace tessera::mapper {

OpStages fc_stages(const ops::Op& op, const arch::ArchSpec& spec,
                   const std::vector<arch::Dataflow>& dataflows) {
  return contraction_forms(op, spec, matmul_forms(op.as<ops::FcShape>()->gemm(), op.dtype, dataflows));
}

}  // namespace tessera::mapper
