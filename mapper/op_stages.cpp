#include "mapper/op_stages.hpp"

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "mapper/op_stages/decompositions.hpp"

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

OpStages stages_of(const ops::Op& op, const arch::ArchSpec& spec,
                   const std::vector<arch::Dataflow>& dataflows) {
  for (const KindStages& entry : kDecompositions) {
    if (std::strcmp(entry.kind, op.kind_name()) != 0) continue;
    OpStages stages = entry.stages(op, spec, dataflows);
    // A contraction's epilogue runs on the vector unit, fused or not: without one it cannot run at all.
    stages.epilogue = EpilogueWork::of(op);
    if (stages.epilogue && !spec.core.vector && !stages.epilogue->runs_in(spec.core.pe_array)) {
      // Steps, or only the rounding to a narrower output type (`out`), which the vector unit does too.
      const bool rounds_only = stages.epilogue->rounds_only();
      throw InputError(
          op.where, op.name,
          rounds_only
              ? fmt::format("{} ({} {}) stores its output as {} (out), rounded on the vector unit, and "
                            "machine {} has none",
                            op.name, op.kind_name(), op.shape_text(), name_of(stages.epilogue->out_dtype()),
                            spec.name)
              : fmt::format("{} ({} {}) has an epilogue ({}), and machine {} has no vector unit to run it",
                            op.name, op.kind_name(), op.shape_text(), stages.epilogue->text(), spec.name),
          std::string("give the machine's cores one: core.vector: {lanes, special_per_cycle, latency_cycles} "
                      "(docs/vector-unit.md), or drop ") +
              (rounds_only ? "`out` (the output then stays in the accumulator type)" : "the epilogue"));
    }
    return stages;
  }
  TESSERA_ASSERT(false, "every registered op kind has a decomposition into stages");
}

}  // namespace tessera::mapper
