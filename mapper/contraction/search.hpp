// The contraction family's search: one contraction stage's mapspace scored (search_stage), and an op's
// contraction stages searched side by side (contraction_forms: a conv's packings of its implicit GEMM and its
// direct forms), each stage kind's rows merged per dataflow, fused and unfused with an epilogue.
#pragma once

#include <memory>
#include <vector>

#include "arch/spec.hpp"
#include "mapper/contraction/mapspace.hpp"
#include "mapper/contraction/stage.hpp"
#include "mapper/kit/epilogue_work.hpp"
#include "mapper/op_stages.hpp"
#include "mapper/search.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

// One stage's search. Throws InputError when no requested dataflow has a legal mapping, naming the constraint
// that kills the smallest tile.
SearchResult search_stage(const std::shared_ptr<const ContractionStage>& stage, const arch::ArchSpec& spec,
                          const SearchOptions& options, const EpilogueSearch& epilogue = {});

// One form of an op: a stage and the dataflows it is searched for.
struct StageForm {
  std::shared_ptr<const ContractionStage> stage;
  std::vector<arch::Dataflow> dataflows;
};

// An op's contraction stages and its epilogue (mapper/kit/epilogue_work.hpp), searched fused and unfused.
struct ContractionForms {
  std::vector<StageForm> forms;  // in the order they are searched and listed
  std::shared_ptr<const EpilogueWork> epilogue;
};

// The op's search over `forms`: each of them, the forms of one stage kind merged per dataflow (each
// candidate's mapping says its stage); per_dataflow lists the kinds one after another (a conv's implicit
// GEMM's WS, OS, IS, then its direct form's WS, OS, IS and RS), side by side. A dataflow a stage kind can
// never run is listed only where no other kind lists it. Throws like search_stage when no form has a legal
// mapping. An op with an epilogue is searched fused and unfused side by side: each kind's rows twice, "ws
// fused" ... then "ws unfused" ... (the unfused pass's mapping is the vector stage's best over the output,
// whatever the contraction's). Throws InputError when the op has an epilogue the machine cannot run (no
// vector unit). No forms: not mapped.
OpStages contraction_forms(const ops::Op& op, const arch::ArchSpec& spec, std::vector<StageForm> forms);

}  // namespace tessera::mapper
