// attention's decomposition (issue "Attention: flash-style prefill, paged KV-cache decode with GQA"): the
// stage graph S = Q K^T (PE array), the online softmax (vector unit), O = P V (PE array) and the rescale,
// mapped flash-style (mapper/attention/stage.hpp). It needs a vector unit for the softmax.
#include "mapper/attention/stage.hpp"
#include "mapper/decompositions.hpp"

namespace tessera::mapper {

OpStages attention_stages(const ops::Op& op, const arch::ArchSpec& spec, const std::vector<arch::Dataflow>&) {
  OpStages stages;
  if (!spec.core.vector) {
    stages.not_mapped = "the machine model has no vector unit for its softmax (core.vector)";
    return stages;
  }
  return one_form(AttentionStage::of(op));
}

}  // namespace tessera::mapper
