// route: a mixture-of-experts router's scores, its selection of each row's experts and their gate weights.
// Its instruction is an arch::VecRoute (arch/isa/vec_route.hpp: its options, operands and syntax); this
// descriptor holds its work's rules and passes.
#include <fmt/format.h>

#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

std::string route_work_problem(const VectorWork& work) {
  if (work.cols > kMaxRouteExperts)
    return fmt::format("a route scores at most {} experts (cols), got {}", kMaxRouteExperts, work.cols);
  if (work.route_groups < 1 || work.cols % work.route_groups != 0)
    return fmt::format("route_groups must divide the {} experts (cols), got {}", work.cols,
                       work.route_groups);
  if (work.route_topk_groups < 1 || work.route_topk_groups > work.route_groups)
    return fmt::format("route_topk_groups must be in [1, route_groups] = [1, {}], got {}", work.route_groups,
                       work.route_topk_groups);
  if (work.route_top_k < 1 || work.route_top_k > work.route_topk_groups * (work.cols / work.route_groups))
    return fmt::format("route_top_k must be in [1, the experts of the kept groups] = [1, {}], got {}",
                       work.route_topk_groups * (work.cols / work.route_groups), work.route_top_k);
  return "";
}

// route over a rows x experts tile of fp32 logits at x (docs/vector-unit.md, "route"): the scores written
// over the logits, the selection as the hardware makes it (group scores, kept groups, top_k arg-max passes),
// then the chosen experts' weights into o. The pass that writes the scores also takes the selection's first
// step on them (the group scores, or the first arg-max) while they are in the unit: a separate pass would
// read them back right behind their writes.
void route_passes(const VectorWork& work, VectorPasses& passes) {
  const bool grouped = work.route_groups > 1;
  // The first step: each group's two highest scores (a compare against each of the two running best), or
  // the row's arg-max (a compare and a select); either way the row ends in the lane tree.
  constexpr int64_t kFirstStepOps = 2;
  if (work.route_sigmoid) {
    VectorPass sigmoid = simple_pass(
        grouped ? "scores sigmoid(x) over x, group top-2 sums" : "scores sigmoid(x) over x, first arg-max",
        kFirstStepOps);
    sigmoid.special_ops = 1;
    sigmoid.output_writes = 1;
    sigmoid.reduces = true;
    passes.add(sigmoid);
  } else {
    VectorPass max = simple_pass("row max", 1);
    max.reduces = true;
    passes.add(max);
    VectorPass exp = simple_pass("exp(x - max) over x, row sum", 2);  // sub, exp, add
    exp.special_ops = 1;
    exp.reduces = true;
    exp.depends = true;
    exp.output_writes = 1;
    passes.add(exp);
    VectorPass normalise = simple_pass(
        grouped ? "scores exp * 1/sum over x, group top-2 sums" : "scores exp * 1/sum over x, first arg-max",
        1 + kFirstStepOps);
    normalise.output_writes = 1;
    normalise.reduces = true;
    normalise.depends = true;
    normalise.scalar_special = true;  // the reciprocal of the sum
    passes.add(normalise);
  }
  int64_t choices_left = work.route_top_k;
  if (grouped) {
    // The kept groups: topk_groups arg-max passes over the row's group scores (kept in the unit like a row
    // statistic), each after the previous one's winner.
    VectorPass keep = simple_pass("kept groups: arg-max of the group scores", 2);  // compare, select
    keep.cols = work.route_groups;
    keep.input_reads = 0;
    keep.reduces = true;
    keep.depends = true;
    keep.repeats = work.route_topk_groups;
    passes.add(keep);
  } else {
    --choices_left;  // the first arg-max was the scores pass's
  }
  if (choices_left > 0) {
    // The remaining arg-max passes over the kept groups' experts (a compare and a select an element, the
    // experts chosen so far masked), each after the previous one's winner.
    VectorPass select = simple_pass("top-k: arg-max of the scores", 2);
    select.cols = work.route_topk_groups * (work.cols / work.route_groups);
    select.reduces = true;
    select.depends = true;
    select.repeats = choices_left;
    passes.add(select);
  }
  // The chosen experts' scores (the int32 table at i, top_k a row) gathered into o, their row sum; then
  // times routed_scaling / sum (the reciprocal a scalar special function of the sum).
  VectorPass gather = simple_pass("gather the chosen scores into o, row sum", 1);
  gather.cols = work.route_top_k;
  gather.row_statistic_reads = work.route_top_k;
  gather.output_writes = 1;
  gather.reduces = true;
  gather.depends = true;
  passes.add(gather);
  VectorPass weights = simple_pass("weights: o * scaling/sum", 1);
  weights.cols = work.route_top_k;
  weights.input_reads = 0;
  weights.output_reads = 1;
  weights.output_writes = 1;
  weights.depends = true;
  weights.scalar_special = true;
  passes.add(weights);
}

}  // namespace

VectorKindInfo route_kind_info() {
  return with_rules(own_instruction_kind(), &route_passes, &route_work_problem);
}

}  // namespace tessera::arch
