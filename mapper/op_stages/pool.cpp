// pool: no stage on this machine model (it is vector work, and there is no vector unit yet): reported as not
// simulated, never dropped and never timed as free.
#include "mapper/op_stages/decompositions.hpp"

namespace tessera::mapper {

OpStages pool_stages(const ops::Op&, const arch::ArchSpec&, const std::vector<arch::Dataflow>&) {
  OpStages stages;
  stages.not_mapped = "the machine model has no vector unit";
  return stages;
}

}  // namespace tessera::mapper
