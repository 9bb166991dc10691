// gemm: one GEMM (mapper/contraction/matmul_forms.hpp).
#include "mapper/contraction/matmul_forms.hpp"
#include "mapper/decompositions.hpp"

namespace tessera::mapper {

OpStages gemm_stages(const ops::Op& op, const arch::ArchSpec& spec,
                     const std::vector<arch::Dataflow>& dataflows) {
  return contraction_forms(op, spec, matmul_forms(*op.as<ops::GemmShape>(), op.dtype, dataflows));
}

}  // namespace tessera::mapper
