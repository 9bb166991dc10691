// moe's decomposition (issue "MoE layers"): the stage graph of the router GEMM, the routing on the vector
// unit, the permutation by DMA gathers, the experts' ragged GEMMs and the weighted combine
// (mapper/moe/stage.hpp). It needs a vector unit for the routing, the activations and the combine.
#include "mapper/decompositions.hpp"
#include "mapper/moe/stage.hpp"

namespace tessera::mapper {

OpStages moe_stages(const ops::Op& op, const arch::ArchSpec& spec, const std::vector<arch::Dataflow>&) {
  OpStages stages;
  if (!spec.core.vector) {
    stages.not_mapped =
        "the machine model has no vector unit for its routing, activations and combine "
        "(core.vector)";
    return stages;
  }
  return one_form(MoeStage::of(op));
}

}  // namespace tessera::mapper
