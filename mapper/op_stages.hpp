// What an op becomes on the PE array (DESIGN.md, "Operators as stage graphs"): the forms the mapper searches
// for it side by side, each a contraction stage (a stage graph of one stage today). Each op kind's
// decomposition is its own file under op_stages/, listed in op_stages.cpp's table: a new op kind is its file
// in ops/kinds/, and here its file and a line.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "arch/spec.hpp"
#include "mapper/epilogue_work.hpp"
#include "mapper/stage.hpp"
#include "mapper/stage_graph.hpp"
#include "mapper/vector_stage.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

// One form of an op: a stage and the dataflows it is searched for.
struct StageForm {
  std::shared_ptr<const ContractionStage> stage;
  std::vector<arch::Dataflow> dataflows;
};

struct OpStages {
  std::vector<StageForm> forms;               // in the order they are searched and listed
  std::shared_ptr<const VectorStage> vector;  // or the op is vector work (mapper/vector_stage.hpp)
  std::shared_ptr<const StageGraph> graph;    // or a stage graph over several units (attention)
  // The contraction's epilogue on the vector unit, searched fused and unfused (mapper/epilogue_work.hpp).
  std::shared_ptr<const EpilogueWork> epilogue;
  bool mapped() const { return !forms.empty() || vector || graph; }
  std::string not_mapped;  // why there are none ("the machine model has no vector unit")
};

// The forms of `op` on `spec` when `dataflows` are requested.
OpStages stages_of(const ops::Op& op, const arch::ArchSpec& spec,
                   const std::vector<arch::Dataflow>& dataflows);

// A kind's decomposition (op_stages/<kind>.cpp).
using Decomposition = OpStages (*)(const ops::Op& op, const arch::ArchSpec& spec,
                                   const std::vector<arch::Dataflow>& dataflows);

}  // namespace tessera::mapper
