// vec map: an elementwise chain of element functions over X (a bias row, a tile at y, a scale).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

std::string map_work_problem(const VectorWork& work) {
  if (work.map_simple_ops < 0) return fmt::format("map_simple_ops must be >= 0, got {}", work.map_simple_ops);
  if (work.map_special_ops < 0)
    return fmt::format("map_special_ops must be >= 0, got {}", work.map_special_ops);
  if (work.map_simple_ops == 0 && work.map_special_ops == 0)
    return "a map needs at least one op per element (map_simple_ops + map_special_ops >= 1)";
  if (work.map_tile_operands < 0 || work.map_row_operands < 0 || work.map_tile_operands > 4 ||
      work.map_row_operands > 4)
    return fmt::format("a map takes 0 to 4 tile and 0 to 4 row operands, got {} and {}",
                       work.map_tile_operands, work.map_row_operands);
  return "";
}

void map_passes(const VectorWork& work, VectorPasses& passes) {
  VectorPass chain = simple_pass("elementwise chain", work.map_simple_ops);
  chain.special_ops = work.map_special_ops;
  chain.input_reads += work.map_tile_operands;
  chain.parameter_reads = work.map_row_operands;
  chain.output_writes = 1;
  passes.add(chain);
}

bool reads_tile(VecFn fn) {
  return info_of(fn).operand == FnOperand::tile;
}

void check_map(const VecOp& op, const InstructionChecks& checks) {
  const auto readers_of_y = std::count_if(op.chain.begin(), op.chain.end(), reads_tile);
  if (readers_of_y > 1)
    checks.fail("a chain reads y in at most one step", "split the chain into two vec map instructions");
  if (std::count(op.chain.begin(), op.chain.end(), VecFn::bias) > 1)
    checks.fail("a chain adds the bias row at b in at most one step",
                "split the chain into two vec map instructions");
  const bool scales = std::find(op.chain.begin(), op.chain.end(), VecFn::scale) != op.chain.end();
  if (!scales && op.scale != 1.0)
    checks.fail(fmt::format("scale={} has no scale step to apply it", op.scale), "add scale to fn=");
  if (scales && !std::isfinite(op.scale)) checks.fail(fmt::format("scale must be finite, got {}", op.scale));
}

}  // namespace

VectorKindInfo map_kind_info() {
  using namespace vec_option;  // scale=: the factor of a scale step
  VectorKindInfo info = tile_kind(options({fn}), options({y, y_pitch, b, scale}),
                                  "fn=F[+F...] [y=ADDR] [y_pitch=B] [b=ADDR] [scale=S]", true);
  info.operands = {XRows::rows, YRole::chain_step, GRole::none, BRole::bias_step};
  return with_rules(info, &map_passes, &map_work_problem, &check_map);
}

}  // namespace tessera::arch
