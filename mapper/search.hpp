// Search (DESIGN.md, "Dataflows"): every legal mapping of the requested dataflows is scored by the cost
// model; the best few of each dataflow are kept for simulation. Threads split the mapspace; the result does
// not depend on how many there are (ties break on the mapping's place in the enumeration).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch/spec.hpp"
#include "common/error.hpp"
#include "mapper/cost.hpp"
#include "mapper/mapping.hpp"
#include "mapper/objective.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

struct Candidate {
  Mapping mapping;  // with its stage
  Cost cost;
  uint64_t index = 0;  // place in the enumeration: (split << 32) | order within the split
};

// Ranks by the estimate of `objective`, then estimated cycles, then DRAM bytes, then enumeration order.
bool ranks_before(const Candidate& a, const Candidate& b, Objective objective = Objective::cycles);
// The estimate `objective` ranks a candidate by.
double objective_value(Objective objective, const Candidate& candidate);
// Keeps `front` the candidates seen that no other one dominates on the estimates of cycles, energy and DRAM
// bytes (no worse on all three and better on one; of equal ones the first in the enumeration): the Pareto
// front, the same whatever order the candidates come in.
void keep_pareto(std::vector<Candidate>& front, const Candidate& candidate);
// Whether a member of `front` dominates `candidate` (keep_pareto would leave it out).
bool dominated(const std::vector<Candidate>& front, const Candidate& candidate);
// Keeps `best` the `limit` best candidates seen, in rank order, `candidate` among them if it ranks there.
void keep_best(std::vector<Candidate>& best, Candidate candidate, size_t limit,
               Objective objective = Objective::cycles);

// Why the smallest mapping of a row does not fit, or "" if some mapping fits.
struct Infeasibility {
  std::string field;    // the machine field that kills it ("core.sram.kib")
  std::string message;  // "needs 72 KiB of SRAM, the core has 64 KiB"
};

struct SearchOptions {
  std::vector<arch::Dataflow> dataflows;
  int keep_per_dataflow = 8;
  Objective objective = Objective::cycles;  // what each dataflow's best are ranked by
  int threads = 1;
  // Where a machine field is written, for the "no legal mapping" error (the CLI knows the YAML).
  std::function<SourceLocation(const std::string& field)> locate_field;
  std::string op_description;  // "ffn1 (gemm 512x3072x768 bf16)"
  // The workload's seed, where the search may depend on the op's generated inputs (a MoE layer's routing
  // sizes its all-to-all form); absent: forms that need it are not searched.
  std::optional<uint64_t> seed;
};

// A row's search: a dataflow (or a form's row) over the mappings of one kind (a contraction op's forms of the
// same stage kind are merged: a conv's packings of its implicit GEMM).
struct DataflowSearch {
  arch::Dataflow dataflow = arch::Dataflow::ws;
  std::string stage_kind;  // ContractionStage::kind()
  std::string label_text;  // as reports name the dataflow on that kind of stage ("ws-direct"; "ws fused")
  Fusion fusion = Fusion::none;  // of an op with an epilogue: fused or unfused
  const std::string& label() const { return label_text; }
  int64_t legal = 0;
  std::vector<Candidate> best;   // ranked, at most keep_per_dataflow
  std::vector<Candidate> front;  // the Pareto front of every mapping scored (keep_pareto)
  Infeasibility why_none;        // when legal == 0
};

struct SearchResult {
  std::vector<DataflowSearch> per_dataflow;
  int64_t evaluated = 0;
  double seconds = 0;
  Objective objective = Objective::cycles;  // the search's
  std::vector<Candidate> ranked() const;    // every kept candidate, best first by the objective
  std::vector<Candidate> pareto() const;    // the op's Pareto front over every dataflow, fewest cycles first
};

// Refuses, as a search with no legal mapping, a form whose stages run on the PE array in `dtype` where the
// array does not compute in it (attention's and MoE's GEMMs run in the op's type).
void require_pe_dtype(DType dtype, const arch::ArchSpec& spec, const SearchOptions& options);

// An op's search: its decomposition's (mapper/op_stages.hpp: its contraction stages side by side, or the one
// form that searches itself). Throws InputError when nothing is legal; an op with no forms is the caller's to
// report (stages_of says why).
SearchResult search_op(const ops::Op& op, const arch::ArchSpec& spec, const SearchOptions& options);

}  // namespace tessera::mapper
