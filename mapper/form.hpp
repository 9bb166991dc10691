// A mapped form (DESIGN.md, "Mapped forms"): one way an op's work becomes tile programs — a contraction stage
// (a GEMM, an implicit or direct convolution, row stationary), a vector stage, an attention form (flash,
// flash-mc, flash-split, naive), an MoE placement — and everything the mapper asks of it: its search (its
// mappings enumerated and scored), the estimate of one mapping, the lowering to a tile program, the row's
// label, a one-line description and the report's fields. A mapping is the form and its choices
// (mapper/mapping.hpp); the search, the cost model, the lowering and the reports reach a form only through
// this interface, so a new form is its own files and a line in its op kind's decomposition
// (mapper/op_stages.cpp).
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

class Form {
 public:
  virtual ~Form() = default;
  // Its family, as the report's mapping names it: "contraction", "vector", "attention", "moe".
  virtual const char* family() const = 0;
  // Every legal mapping scored, the best few kept per row (a row per dataflow or form). `self` is this form,
  // for the candidates' mappings to hold.
  virtual SearchResult search(const std::shared_ptr<const Form>& self, const arch::ArchSpec& spec,
                              const SearchOptions& options) const = 0;
  // The cost model's estimate of `mapping` (of this form) on `spec`'s machine.
  virtual Cost estimate(const Mapping& mapping, const arch::ArchSpec& spec) const = 0;
  virtual arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                              const arch::ArchSpec& spec, const std::string& program_name) const = 0;
  // Computes and caches what every lowering of `op` at `seed` reads (a MoE layer's routing), for a caller
  // about to fork worker processes that lower candidates: each would otherwise compute it again. Default:
  // nothing.
  virtual void prepare_lowering(const ops::Op& op, uint64_t seed) const {}
  virtual std::string label(const Mapping& mapping) const = 0;     // the row's name in reports ("flash ws")
  virtual std::string describe(const Mapping& mapping) const = 0;  // the whole mapping, one line
  // The mapping's own choices as a report carries them, "form" first (Mapping::fields); `cost` is the cost
  // model's estimate of it (a contraction reports what it decided: its multicast operands, its edge waste).
  virtual NamedValues fields(const Mapping& mapping, const Cost& cost) const = 0;
  // Why `loser` (a mapping of this form) loses to `winner` (of any form), in the terms an operator engineer
  // uses (mapper/explain.hpp); `*_cycles` are the figures compared (simulated when known, else estimated).
  // Default: the ratio of the cycles.
  virtual std::string why_loses(const Mapping& loser, const Cost& loser_cost, int64_t loser_cycles,
                                const Mapping& winner, const Cost& winner_cost, int64_t winner_cycles) const;
  // Whether `other` is this form: by default the same object; a contraction stage made again for an equal
  // op is the same form too.
  virtual bool same_form(const Form& other) const { return this == &other; }
};

}  // namespace tessera::mapper
