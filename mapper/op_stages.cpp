#include "mapper/op_stages.hpp"

#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "mapper/decompositions.hpp"

namespace tessera::mapper {

namespace {
struct KindStages {
  const char* kind;
  Decomposition stages;
};
// One line per op kind.
KindStages kDecompositions[] = {
    {"gemm", &gemm_stages},
    {"fc", &fc_stages},
    {"conv2d", &conv2d_stages},
    {"pool", &vector_work_stages},
    {"softmax", &vector_work_stages},
    {"layernorm", &vector_work_stages},
    {"rmsnorm", &vector_work_stages},
    {"elementwise", &vector_work_stages},
    {"attention", &attention_stages},
    {"rope", &vector_work_stages},
    {"moe", &moe_stages},
};
}  // namespace

Decomposition replace_decomposition(const std::string& kind, Decomposition decomposition) {
  for (KindStages& entry : kDecompositions)
    if (kind == entry.kind) return std::exchange(entry.stages, decomposition);
  TESSERA_ASSERT(false, "a decomposition replaced is of an op kind the table lists");
}

OpStages one_form(std::shared_ptr<const Form> form) {
  OpStages stages;
  if (!form) return stages;
  stages.search = [form](const arch::ArchSpec& spec, const SearchOptions& options) {
    return form->search(form, spec, options);
  };
  return stages;
}

OpStages stages_of(const ops::Op& op, const arch::ArchSpec& spec,
                   const std::vector<arch::Dataflow>& dataflows) {
  for (const KindStages& entry : kDecompositions)
    if (std::strcmp(entry.kind, op.kind_name()) == 0) return entry.stages(op, spec, dataflows);
  TESSERA_ASSERT(false, "every registered op kind has a decomposition into stages");
}

}  // namespace tessera::mapper
