// A stage graph (DESIGN.md, "Operators as stage graphs"): an op whose stages run on several units with their
// intermediates kept in SRAM — attention's S = Q K^T (PE array), online softmax (vector unit), O = P V (PE
// array) and rescale — owns its mapspace, its cost and its lowering behind this interface. The search, the
// cost model and the lowering dispatch to it through Mapping::graph, so a new graph (MoE's router, permute,
// grouped GEMMs and combine next) is its own files and one line in op_stages.cpp's table.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "common/named_value.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

struct Mapping;
struct Cost;
struct SearchOptions;
struct SearchResult;

class StageGraph {
 public:
  virtual ~StageGraph() = default;
  virtual const char* kind() const = 0;  // "attention"
  // Every legal mapping scored, the best few kept per row (a row per dataflow or form). `self` is this graph,
  // for the candidates' mappings to hold.
  virtual SearchResult search(const std::shared_ptr<const StageGraph>& self, const arch::ArchSpec& spec,
                              const SearchOptions& options) const = 0;
  virtual Cost evaluate(const Mapping& mapping, const arch::ArchSpec& spec) const = 0;
  virtual arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                              const arch::ArchSpec& spec, const std::string& program_name) const = 0;
  // Computes and caches what every lowering of `op` at `seed` reads (a MoE layer's routing), for a caller
  // about to fork worker processes that lower candidates: each would otherwise compute it again. Default:
  // nothing.
  virtual void prepare_lowering(const ops::Op& op, uint64_t seed) const {}
  virtual std::string label(const Mapping& mapping) const = 0;     // the row's name in reports ("flash ws")
  virtual std::string describe(const Mapping& mapping) const = 0;  // the whole mapping, one line
  // The mapping's own choices as a report carries them, "form" first (Mapping::fields).
  virtual NamedValues fields(const Mapping& mapping) const = 0;
};

}  // namespace tessera::mapper
