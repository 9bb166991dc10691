// The decomposition of each op kind into forms, one file each in its family's room, listed in op_stages.cpp.
#pragma once

#include <vector>

#include "mapper/op_stages.hpp"

namespace tessera::mapper {

OpStages gemm_stages(const ops::Op& op, const arch::ArchSpec& spec,
                     const std::vector<arch::Dataflow>& dataflows);
OpStages fc_stages(const ops::Op& op, const arch::ArchSpec& spec,
                   const std::vector<arch::Dataflow>& dataflows);
OpStages conv2d_stages(const ops::Op& op, const arch::ArchSpec& spec,
                       const std::vector<arch::Dataflow>& dataflows);
OpStages attention_stages(const ops::Op& op, const arch::ArchSpec& spec,
                          const std::vector<arch::Dataflow>& dataflows);
// Not mapped yet: a located error (issue 12's next step).
OpStages moe_stages(const ops::Op& op, const arch::ArchSpec& spec,
                    const std::vector<arch::Dataflow>& dataflows);
// pool and the other vector kinds.
OpStages vector_work_stages(const ops::Op& op, const arch::ArchSpec& spec,
                            const std::vector<arch::Dataflow>& dataflows);

}  // namespace tessera::mapper
