#include "mapper/op_stages.hpp"

#include <cstring>

#include "common/error.hpp"
#include "mapper/op_stages/decompositions.hpp"

namespace tessera::mapper {

namespace {
struct KindStages {
  const char* kind;
  Decomposition stages;
};
// One line per op kind.
constexpr KindStages kDecompositions[] = {
    {"gemm", &gemm_stages},           {"fc", &fc_stages},
    {"conv2d", &conv2d_stages},       {"pool", &vector_work_stages},
    {"softmax", &vector_work_stages}, {"layernorm", &vector_work_stages},
    {"rmsnorm", &vector_work_stages}, {"elementwise", &vector_work_stages},
};
}  // namespace

OpStages stages_of(const ops::Op& op, const arch::ArchSpec& spec,
                   const std::vector<arch::Dataflow>& dataflows) {
  for (const KindStages& entry : kDecompositions)
    if (std::strcmp(entry.kind, op.kind_name()) == 0) return entry.stages(op, spec, dataflows);
  TESSERA_ASSERT(false, "every registered op kind has a decomposition into stages");
}

}  // namespace tessera::mapper
