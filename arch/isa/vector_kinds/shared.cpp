#include "arch/isa/vector_kinds/shared.hpp"

#include <fmt/format.h>

#include <cmath>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/vec_op.hpp"

namespace tessera::arch {

VectorPass simple_pass(const char* what, int64_t simple_ops) {
  VectorPass pass;
  pass.what = what;
  pass.simple_ops = simple_ops;
  pass.input_reads = 1;
  return pass;
}

VectorPass exp_pass(const char* what, const VectorWork& work) {
  VectorPass exp = simple_pass(what, 2 + work.softmax_extra_simple_ops);
  exp.special_ops = 1;
  exp.reduces = true;
  exp.depends = true;
  exp.output_writes = 1;
  return exp;
}

void read_norm_sum_back(const VectorWork& work, VectorPasses& passes) {
  if (!work.norm_adds_tile) return;
  passes.pass[0].input_reads = 2;
  passes.pass[0].output_writes = 1;
  for (int p = 1; p < passes.count; ++p) {
    passes.pass[p].input_reads = 0;
    passes.pass[p].output_reads = 1;
  }
}

void add_row_reduction(const char* what, VectorPasses& passes) {
  VectorPass reduce = simple_pass(what, 1);
  reduce.reduces = true;
  reduce.writes_row_statistic = true;
  passes.add(reduce);
}

VectorKindInfo row_reduction_kind(void (*add_passes)(const VectorWork& work, VectorPasses& passes)) {
  VectorKindInfo info = tile_kind(0, 0, "", true);
  info.operands.o_cols = OutputCols::one;  // one element per row
  return with_rules(info, add_passes);
}

std::string softmax_work_problem(const VectorWork& work) {
  if (work.softmax_extra_simple_ops < 0)
    return fmt::format("softmax_extra_simple_ops must be >= 0, got {}", work.softmax_extra_simple_ops);
  return "";
}

std::string parts_work_problem(const VectorWork& work) {
  if (work.merge_parts < 1 || work.merge_parts > kMaxMergeParts)
    return fmt::format("merge_parts must be in [1, {}], got {}", kMaxMergeParts, work.merge_parts);
  return "";
}

void check_norm(const VecOp& op, const InstructionChecks& checks) {
  if (!op.chain.empty() && !op.norm_adds_y())
    checks.fail(fmt::format("a {}'s fn= is add (the tile at y added to X before normalising), nothing else",
                            name_of(op.kind)));
  if (!(op.eps > 0 && std::isfinite(op.eps)))
    checks.fail(
        fmt::format("eps must be a positive number, got {}", op.eps),
        "eps is added to the variance (mean square) before its square root: 1e-5 or 1e-6 as models use");
}

void check_parts(const VecOp& op, const InstructionChecks& checks) {
  if (op.parts > kMaxMergeParts)
    checks.fail(
        fmt::format("a {} takes at most {} parts, got {}", name_of(op.kind), kMaxMergeParts, op.parts),
        "one part per core of a split: a mesh has at most 64x64 cores");
}

void check_softmax_scale(const VecOp& op, const InstructionChecks& checks) {
  if (!(op.scale > 0 && std::isfinite(op.scale)))
    checks.fail(fmt::format("scale must be a positive number, got {}", op.scale),
                "the logits' factor, e.g. 1/sqrt(head_dim); leave it out for 1");
}

}  // namespace tessera::arch
