#include "arch/isa/vec_route.hpp"

#include <fmt/format.h>

#include <cmath>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

namespace {

constexpr const char* kRouteSyntax =
    "a route is written: route x=ADDR i=ADDR o=ADDR rows=R experts=E top_k=K scoring=softmax|sigmoid "
    "[groups=G topk_groups=T] [scaling=S] [x_pitch=B] [o_pitch=B] (x: fp32 logits [R x E], overwritten by "
    "the scores; i: int32 chosen experts [R x K]; o: fp32 gate weights [R x K])";

enum RouteOption : size_t {
  key_x,
  key_i,
  key_o,
  key_rows,
  key_experts,
  key_top_k,
  key_scoring,
  key_groups,
  key_topk_groups,
  key_scaling,
  key_x_pitch,
  key_o_pitch,
};

const std::vector<std::string>& option_names() {
  static const std::vector<std::string> names = {"x",           "i",       "o",       "rows",
                                                 "experts",     "top_k",   "scoring", "groups",
                                                 "topk_groups", "scaling", "x_pitch", "o_pitch"};
  return names;
}

const std::vector<std::string>& scoring_names() {
  static const std::vector<std::string> names = {"softmax", "sigmoid"};  // as ops::MoeScoring
  return names;
}

constexpr uint32_t bit(RouteOption option) {
  return uint32_t{1} << option;
}

constexpr uint32_t kRequired = (uint32_t{1} << key_groups) - 1;  // every option before groups

}  // namespace

const std::vector<std::string>& VecRoute::mnemonics() {
  static const std::vector<std::string> names = {"route"};
  return names;
}

VectorWork VecRoute::work() const {
  VectorWork work;
  work.kind = VectorKind::route;
  work.rows = rows;
  work.cols = experts;
  work.route_top_k = top_k;
  work.route_groups = groups;
  work.route_topk_groups = topk_groups;
  work.route_sigmoid = sigmoid;
  return work;
}

VecRoute VecRoute::read(LineReader& in, std::string_view, int operation_column) {
  VecRoute op;
  uint32_t given = 0;
  while (!in.at_operation_end()) {
    switch (static_cast<RouteOption>(in.read_option(option_names(), 0, given, "vec route", kRouteSyntax))) {
      case key_x:
        op.x_address = in.read_unsigned("the SRAM address of the logits X");
        break;
      case key_i:
        op.i_address = in.read_unsigned("the SRAM address of the chosen experts I");
        break;
      case key_o:
        op.o_address = in.read_unsigned("the SRAM address of the weights O");
        break;
      case key_rows:
        op.rows = in.read_positive("rows");
        break;
      case key_experts:
        op.experts = in.read_positive("experts");
        break;
      case key_top_k:
        op.top_k = in.read_positive("top_k");
        break;
      case key_scoring:
        op.sigmoid =
            in.read_name_list("the scoring (softmax or sigmoid)", scoring_names()).at(0) == "sigmoid";
        break;
      case key_groups:
        op.groups = in.read_positive("groups");
        break;
      case key_topk_groups:
        op.topk_groups = in.read_positive("topk_groups");
        break;
      case key_scaling:
        op.scaling = in.read_real("scaling");
        break;
      case key_x_pitch:
        op.x_pitch_bytes = in.read_size("the row pitch of X in bytes");
        break;
      case key_o_pitch:
        op.o_pitch_bytes = in.read_size("the row pitch of O in bytes");
        break;
    }
  }
  in.require_options(option_names(), given, kRequired, operation_column, "vec route", kRouteSyntax);
  if (((given & bit(key_groups)) != 0) != ((given & bit(key_topk_groups)) != 0))
    in.fail(operation_column,
            "vec route takes groups= and topk_groups= together (the groups of experts and how many are kept)",
            kRouteSyntax);
  return op;
}

void VecRoute::write(LineWriter& out) const {
  out.put("route x=0x{:x} i=0x{:x} o=0x{:x} rows={} experts={} top_k={} scoring={}", x_address, i_address,
          o_address, rows, experts, top_k, sigmoid ? "sigmoid" : "softmax");
  if (groups != 1 || topk_groups != 1) out.put(" groups={} topk_groups={}", groups, topk_groups);
  if (scaling != 1.0) out.put(" scaling={}", scaling);
  out.write_pitch("x_pitch", x_pitch_bytes);
  out.write_pitch("o_pitch", o_pitch_bytes);
}

void VecRoute::check(const InstructionChecks& checks) const {
  const auto& vector = checks.spec().core.vector;
  if (!vector)
    checks.fail("the machine has no vector unit", "give its cores one: core.vector (docs/vector-unit.md)");
  if (experts > kMaxRouteExperts)
    checks.fail(fmt::format("a route scores at most {} experts, got {}", kMaxRouteExperts, experts),
                "every shipped model has at most 256");
  if (top_k > experts)
    checks.fail(fmt::format("top_k {} is more than the {} experts", top_k, experts),
                "each row chooses top_k distinct experts: at most experts");
  if (experts % groups != 0)
    checks.fail(fmt::format("groups {} does not divide the {} experts", groups, experts),
                "the groups are equal runs of consecutive experts");
  if (topk_groups > groups)
    checks.fail(fmt::format("topk_groups {} is more than the {} groups", topk_groups, groups),
                "the groups kept are some of the groups: at most groups");
  if (top_k > topk_groups * (experts / groups))
    checks.fail(fmt::format("top_k {} is more than the {} experts of the {} kept groups", top_k,
                            topk_groups * (experts / groups), topk_groups),
                "keep more groups (topk_groups) or choose fewer experts");
  if (!(scaling > 0 && std::isfinite(scaling)))
    checks.fail(fmt::format("scaling must be a positive number, got {}", scaling),
                "the gate weights' factor (DeepSeek-V3's routed_scaling 2.5); leave it out for 1");
  if (const std::string problem = vector_work_problem(*vector, work()); !problem.empty())
    checks.fail(problem);
  // The tiles in SRAM: experts <= 2^16 and rows bounded by the SRAM before the products are formed.
  const int64_t word = size_bytes(DType::fp32);
  const int64_t sram = checks.spec().core.sram.bytes;
  if (rows > sram / (experts * word)) checks.fail("the tiles are larger than the core's SRAM");
  checks.sram_range("logits x", x_address, rows, experts * word, x_pitch_bytes);
  checks.sram_range("chosen experts i", i_address, rows, top_k * size_bytes(DType::int32), 0);
  checks.sram_range("weights o", o_address, rows, top_k * word, o_pitch_bytes);
}

}  // namespace tessera::arch
