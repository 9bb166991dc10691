// Layers of the same shape (ResNet's repeated blocks, MobileNet's) map and time alike: a run keeps each
// shape's search and each simulated program's timing-only result, keyed by the op's fields (its name, index
// and seed aside, which change neither) and the mapping. Timing does not depend on the data, so reuse is
// exact (docs/design-notes.md, "Repeated layers").
#pragma once

#include <map>
#include <string>

#include "mapper/search.hpp"
#include "ops/workload.hpp"
#include "sim/run_result.hpp"

namespace tessera::flow {

struct LayerCache {
  std::map<std::string, mapper::SearchResult> searches;  // layer key -> the op's search
  std::map<std::string, sim::RunResult> timings;         // layer key + mapping -> its timing-only run
};

// What an op's mapping and timing depend on (with the machine and the settings): its fields but its name.
std::string layer_key(const ops::Op& op);

}  // namespace tessera::flow
