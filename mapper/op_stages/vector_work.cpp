// pool, softmax, layernorm, rmsnorm, elementwise: vector work, with no stage on this machine model yet (the
// vector unit's stage is next): reported as not simulated, never dropped and never timed as free.
#include "mapper/op_stages/decompositions.hpp"

namespace tessera::mapper {

OpStages vector_work_stages(const ops::Op&, const arch::ArchSpec&, const std::vector<arch::Dataflow>&) {
  OpStages stages;
  stages.not_mapped = "the machine model has no vector unit";
  return stages;
}

}  // namespace tessera::mapper
