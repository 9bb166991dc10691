// vec route: a mixture-of-experts router's scores and gate weights on the vector unit (docs/tile-program.md,
// "vec route"; docs/vector-unit.md: its passes and their cost). Its own instruction kind beside VecOp: its
// operands (the chosen experts' int32 table, the routing rule) are no other vector instruction's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
#include "arch/isa/fields.hpp"
#include "arch/isa/queue.hpp"
#include "arch/timing/vector_timing.hpp"

namespace tessera::arch {

class LineReader;
class LineWriter;
class InstructionChecks;

// X [rows x experts] fp32 logits (the router GEMM's) -> O [rows x top_k] fp32 gate weights of the experts the
// int32 table I [rows x top_k] (packed) names per row: the routing is decided on the host
// (ops/moe_routing.hpp) so that the program's gathers are static, and the device computes the weights of
// exactly those experts (an fp32 near tie cannot flip one). Scores as ops::moe_scores (softmax over the row,
// or sigmoid per element), written over X (the unit holds no tile: the selection passes read them back);
// weight_j = score[i_j] / sum over the row's j of score[i_j] * scaling. The timing is the whole selection
// the hardware makes: scores, group scores (groups > 1: of groups equal runs of experts, the topk_groups
// best kept), top_k arg-max passes, the normalisation. Pitches in bytes, 0 = packed rows.
struct VecRoute {
  uint64_t x_address = 0, i_address = 0, o_address = 0;
  int64_t x_pitch_bytes = 0, o_pitch_bytes = 0;
  int64_t rows = 0, experts = 0, top_k = 0, groups = 1, topk_groups = 1;
  bool sigmoid = false;  // scoring=sigmoid (DeepSeek-V3), else softmax (Mixtral, Qwen3-MoE)
  double scaling = 1.0;  // routed_scaling

  // The closed form's description of the instruction (arch/timing/vector_timing.hpp).
  VectorWork work() const;
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("x_address", &VecRoute::x_address), visit("i_address", &VecRoute::i_address);
    visit("o_address", &VecRoute::o_address), visit("x_pitch_bytes", &VecRoute::x_pitch_bytes);
    visit("o_pitch_bytes", &VecRoute::o_pitch_bytes), visit("rows", &VecRoute::rows);
    visit("experts", &VecRoute::experts), visit("top_k", &VecRoute::top_k),
        visit("groups", &VecRoute::groups);
    visit("topk_groups", &VecRoute::topk_groups), visit("sigmoid", &VecRoute::sigmoid);
    visit("scaling", &VecRoute::scaling);
  }
  bool operator==(const VecRoute& other) const { return equal_fields(*this, other); }

  static constexpr QueueKind kQueue = QueueKind::vec;
  static constexpr Cause kWaitersCause = Cause::vector;
  static const std::vector<std::string>& mnemonics();  // route
  static VecRoute read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

}  // namespace tessera::arch
