// A row's `mapping` in report.json speaks its form's language (issue "forms in family rooms", item 6): a
// contraction row its cores, tile, loop order, buffering and multicast; an attention row its form, q blocks,
// k/v tiles and the form's own choice (k/v buffers, splits, softmax rows); an MoE row its placement and
// tiles; a vector row its cores, rows per core and blocks. No row carries another family's keys (before, an
// attention row said `cores {m:1,n:1,k:1}, tile {m:0,n:0,k:0}` beside a description of q blocks).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

const char* kWorkload = R"(name: forms
seed: 4
ops:
  - {name: gemm, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16}
  - {name: conv, kind: conv2d, n: 1, c: 8, h: 10, w: 10, k: 16, r: 3, s: 3, pad: 1, dtype: bf16}
  - {name: attn, kind: attention, batch: 2, heads: 4, kv_heads: 2, seq_q: 1, seq_kv: 200, head_dim: 32,
     causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 16}}
  - {name: moe, kind: moe, tokens: 32, hidden: 64, ffn: 32, experts: 4, top_k: 2, dtype: bf16}
  - {name: norm, kind: rmsnorm, rows: 16, cols: 64, dtype: bf16}
)";

std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& item : object.items()) keys.insert(item.key());
  return keys;
}

TEST(ReportMapping, EachRowCarriesItsOwnFormsFieldsAndNoneOfAnotherFamilys) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  const CommandResult result =
      run_tessera({"run", "--arch", shipped("arch/mesh4x4.yaml"), "--workload", scratch.file("w.yaml"),
                   "--timing-only", "--quiet", "--format", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  const std::set<std::string> contraction = {"dataflow",   "form",       "stage",         "cores",
                                             "tile",       "loop_order", "double_buffer", "multicast",
                                             "edge_waste", "description"};
  std::set<std::string> forms_seen;
  for (const auto& op : report.at("ops")) {
    for (const auto& run : op.at("runs")) {
      const nlohmann::json& mapping = run.at("mapping");
      const std::string form = mapping.at("form");
      forms_seen.insert(form);
      const std::string where =
          op.at("name").get<std::string>() + " " + run.at("dataflow").get<std::string>();
      const std::set<std::string> keys = keys_of(mapping);
      if (form == "contraction") {
        EXPECT_EQ(keys, contraction) << where;
        EXPECT_EQ(keys_of(mapping.at("tile")), (std::set<std::string>{"m", "n", "k"})) << where;
      } else if (form == "vector") {
        EXPECT_EQ(keys, (std::set<std::string>{"dataflow", "form", "cores", "rows_per_core", "block_rows",
                                               "double_buffer", "description"}))
            << where;
      } else if (form.rfind("flash", 0) == 0 || form == "naive") {
        std::set<std::string> expected = {"dataflow",     "form",         "cores",
                                          "q_block_rows", "kv_tile_keys", "description"};
        if (form == "flash-mc") expected.insert({"kv_buffers", "multicast"});
        if (form == "flash-split") expected.insert("kv_splits");
        if (form == "naive") expected.insert("softmax_rows");
        EXPECT_EQ(keys, expected) << where;
        EXPECT_GT(mapping.at("q_block_rows").get<int64_t>(), 0) << where;
        EXPECT_GT(mapping.at("kv_tile_keys").get<int64_t>(), 0) << where;
      } else {
        EXPECT_TRUE(form == "ep" || form == "ep-split" || form == "ep-a2a") << where << ": " << form;
        EXPECT_TRUE(mapping.contains("placement") && mapping.contains("tile")) << where;
        EXPECT_GT(mapping.at("tile").at("n").get<int64_t>(), 0) << where;
        EXPECT_FALSE(mapping.contains("cores") || mapping.contains("loop_order")) << where;
      }
      // The form's name is the row's, before the dataflow.
      if (form != "contraction" && form != "vector")
        EXPECT_EQ(run.at("dataflow").get<std::string>().rfind(form + " ", 0), 0u) << where;
    }
  }
  for (const char* form : {"contraction", "vector", "flash", "flash-split", "naive", "ep", "ep-split"})
    EXPECT_TRUE(forms_seen.count(form)) << form;
}

}  // namespace
}  // namespace tessera
