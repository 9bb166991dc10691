// What several vector kinds' descriptors share: pass shapes, parameter rules and checks.
#pragma once

#include <string>

#include "arch/isa/vector_kinds/vector_kind_info.hpp"

namespace tessera::arch {

// A pass of `simple_ops` simple ops per element that reads the input tile once.
VectorPass simple_pass(const char* what, int64_t simple_ops);

// reduce_sum, reduce_max: one pass of one simple op per element that reduces each row to its one output
// element; and their descriptor, the tile form with one output column per row.
void add_row_reduction(const char* what, VectorPasses& passes);
VectorKindInfo row_reduction_kind(void (*add_passes)(const VectorWork& work, VectorPasses& passes));

// A softmax's exponential pass: sub [+ mul by the scale] [+ select of the mask], exp, add, after the row max;
// the exp values go to the output tile.
VectorPass exp_pass(const char* what, const VectorWork& work);

// A norm of X + Y: the first pass reads both and writes their sum into the output tile; every later pass
// reads that sum back instead of X (the unit holds no tile).
void read_norm_sum_back(const VectorWork& work, VectorPasses& passes);

// softmax, online_softmax: the extra simple ops of a scale and a mask.
std::string softmax_work_problem(const VectorWork& work);
// merge_partials, weighted_sum: the parts.
std::string parts_work_problem(const VectorWork& work);

// layernorm, rmsnorm: fn= is the residual's add or nothing, eps a positive number.
void check_norm(const VecOp& op, const InstructionChecks& checks);
// softmax, online_softmax: the logits' scale is a positive number.
// merge_partials and weighted_sum: at most kMaxMergeParts parts.
void check_parts(const VecOp& op, const InstructionChecks& checks);
void check_softmax_scale(const VecOp& op, const InstructionChecks& checks);

}  // namespace tessera::arch
