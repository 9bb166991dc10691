// Layers of the same shape (ResNet's repeated blocks, MobileNet's) map and time alike: a run keeps each
// shape's search and each simulated program's timing-only result, keyed by the op's identity (its fields and
// dtype; its name, index and seed aside, which change neither) and the mapping. Timing does not depend on the
// data, so reuse is exact (docs/design-notes.md, "Repeated layers").
#pragma once

#include <map>
#include <string>
#include <utility>

#include "mapper/search.hpp"
#include "ops/op.hpp"
#include "sim/run_result.hpp"

namespace tessera::flow {

// What an op's mapping and timing depend on, with the machine and the settings, is its identity.
struct LayerCache {
  std::map<ops::OpIdentity, mapper::SearchResult> searches;
  // Searches made ahead, several at once (flow::search_ahead), until plan_op takes them.
  std::map<ops::OpIdentity, mapper::SearchResult> searched_ahead;
  // (the op's identity, the mapping's description) -> its timing-only run
  std::map<std::pair<ops::OpIdentity, std::string>, sim::RunResult> timings;
};

}  // namespace tessera::flow
