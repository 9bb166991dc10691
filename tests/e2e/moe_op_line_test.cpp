// A moe op's tile-program op line (ops::entry_of, read back by flow::op_from_binding): a group's list field,
// routing.counts, is written joined by '+' and read back as the list.
#include <gtest/gtest.h>

#include "common/config.hpp"
#include "flow/simulate_program.hpp"
#include "ops/op.hpp"
#include "ops/workload.hpp"

namespace tessera {

TEST(MoeOpLine, TheEntryTextOfAMoeWithForcedCountsReadsBackAsTheSameOp) {
  const ops::Workload workload = ops::workload_from_yaml(
      config::load_text("name: w\nseed: 5\nops:\n  - {name: g, kind: gemm, m: 8, n: 8, k: 8, dtype: bf16}\n"
                        "  - {name: experts, kind: moe, tokens: 16, hidden: 32, ffn: 16, experts: 4, top_k: "
                        "2, shared_experts: 1, "
                        "capacity_factor: 1.5, dtype: bf16, routing: {scoring: sigmoid, routed_scaling: 2.5, "
                        "counts: [16, 8, 4, "
                        "4]}}\n",
                        "w.yaml"));
  const ops::Op& op = workload.ops.at(1);
  arch::OpBinding binding;
  for (const auto& [key, value] : ops::entry_of(op))
    if (key == "kind")
      binding.kind = value;
    else
      binding.attributes[key] = value;
  EXPECT_EQ(binding.attributes.at("routing.counts"), "16+8+4+4");
  binding.attributes["index"] = "1";
  binding.attributes["seed"] = "5";
  uint64_t seed = 0;
  const ops::Op again = flow::op_from_binding(binding, "p.tile", &seed);
  EXPECT_EQ(seed, 5u);
  EXPECT_EQ(again.index, 1);
  EXPECT_TRUE(ops::identity_of(again) == ops::identity_of(op));
  EXPECT_EQ(again.shape_text(), op.shape_text());
}

}  // namespace tessera
