// What an op becomes on the machine (DESIGN.md, "Mapped forms"): the contraction stages the mapper searches
// for it side by side, or one form (mapper/form.hpp) that searches itself. Each op kind's
// decomposition is its own file in its family's room (mapper/contraction/decompose_gemm.cpp,
// mapper/attention/decompose.cpp, ...), declared in decompositions.hpp and listed in op_stages.cpp's table: a
// new op kind is its file in ops/kinds/, and here its file and a line.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arch/spec.hpp"
#include "mapper/form.hpp"
#include "mapper/search.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

struct OpStages {
  // The op's search (search_op): its contraction stages' (mapper/contraction/search.hpp, contraction_forms),
  // or one form's (one_form). Empty: not mapped.
  std::function<SearchResult(const arch::ArchSpec& spec, const SearchOptions& options)> search;
  bool mapped() const { return static_cast<bool>(search); }
  std::string not_mapped;  // why there are none ("the machine model has no vector unit")
};

// An op that is one form searching itself (Form::search).
OpStages one_form(std::shared_ptr<const Form> form);

// The forms of `op` on `spec` when `dataflows` are requested.
OpStages stages_of(const ops::Op& op, const arch::ArchSpec& spec,
                   const std::vector<arch::Dataflow>& dataflows);

// A kind's decomposition (decompositions.hpp).
using Decomposition = OpStages (*)(const ops::Op& op, const arch::ArchSpec& spec,
                                   const std::vector<arch::Dataflow>& dataflows);

// Replaces the decomposition of the op kind named `kind` (one the table lists) for the rest of the process
// and returns the one it replaced: a form made outside mapper/ (a test's, an extension's) is searched,
// simulated and reported through mapper/form.hpp alone. Not for use while a search runs.
Decomposition replace_decomposition(const std::string& kind, Decomposition decomposition);

}  // namespace tessera::mapper
