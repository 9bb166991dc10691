// attention's decomposition (issue "Attention: flash-style prefill, paged KV-cache decode with GQA"): the
// stages S = Q K^T (PE array), the online softmax (vector unit), O = P V (PE array) and the rescale are what
// the mapper will search, flash-style and naive; until they are lowered an attention op is reported as not
// simulated, its float64 reference and its GPU record (where one exists) still shown.
#include "mapper/op_stages/decompositions.hpp"

namespace tessera::mapper {

OpStages attention_stages(const ops::Op&, const arch::ArchSpec&, const std::vector<arch::Dataflow>&) {
  OpStages stages;
  stages.not_mapped = "its stages (S = Q K^T, the online softmax, O = P V) are not lowered yet";
  return stages;
}

}  // namespace tessera::mapper
