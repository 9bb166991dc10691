// pool, softmax, layernorm, rmsnorm, elementwise: a vector stage (mapper/kit/vector_stage.hpp). A machine
// without a vector unit cannot run them: a located error naming the op and the missing key (an int8 pool,
// which the vector unit's float arithmetic cannot compute exactly, is reported as not mapped instead).
#include <fmt/format.h>

#include "common/error.hpp"
#include "mapper/decompositions.hpp"
#include "mapper/kit/vector_stage.hpp"

namespace tessera::mapper {

OpStages vector_work_stages(const ops::Op& op, const arch::ArchSpec& spec,
                            const std::vector<arch::Dataflow>&) {
  OpStages stages;
  if (!spec.core.vector)
    throw InputError(op.where, op.name,
                     fmt::format("{} ({} {}) is vector work, and machine {} has no vector unit", op.name,
                                 op.kind_name(), op.shape_text(), spec.name),
                     "give the machine's cores one: core.vector: {lanes, special_per_cycle, latency_cycles} "
                     "(docs/vector-unit.md)");
  stages = one_form(VectorStage::of(op));
  if (!stages.mapped())
    stages.not_mapped = "the vector unit computes in floating point: an int8 pool is not mapped";
  return stages;
}

}  // namespace tessera::mapper
