// vec pool: each output pixel the max or average of its r x s window of input pixels, per channel.
#include <fmt/format.h>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

std::string pool_work_problem(const VectorWork& work) {
  if (work.pool_window < 1) return fmt::format("pool_window must be >= 1, got {}", work.pool_window);
  return "";
}

void pool_passes(const VectorWork& work, VectorPasses& passes) {
  // max or add over the window in each lane, then the multiply by 1/(r*s) for an average.
  VectorPass window = simple_pass("window max or sum", work.pool_window + (work.pool_average ? 1 : 0));
  window.input_reads = work.pool_window;
  window.output_writes = 1;
  passes.add(window);
}

// Every output window of a pool must see a pixel of the tile: padding (above, left, and past the tile's
// last row or column) takes no part in a max and counts as zero in an average.
void check_pool(const VecOp& op, const InstructionChecks& checks) {
  if (op.pad_top >= op.r || op.pad_left >= op.s || (op.e - 1) * op.stride - op.pad_top >= op.ih ||
      (op.q - 1) * op.stride - op.pad_left >= op.iw)
    checks.fail(
        fmt::format("an e x q = {}x{} output of a {}x{}/{} window (pad_top {}, pad_left {}) has windows "
                    "outside the {}x{} input tile",
                    op.e, op.q, op.r, op.s, op.stride, op.pad_top, op.pad_left, op.ih, op.iw));
}

}  // namespace

VectorKindInfo pool_kind_info() {
  using namespace vec_option;  // no rows=: the rows are the output's pixels, e x q
  VectorKindInfo info = tile_kind(options({ih, iw, e, q, r, s, mode}), options({stride, pad_top, pad_left}),
                                  "x=ADDR o=ADDR cols=C dtype=DT ih=H iw=W e=E q=Q r=R s=S [stride=N] "
                                  "[pad_top=N] [pad_left=N] mode=max|avg",
                                  false);
  info.required &= ~options({rows});
  info.operands.x_rows = XRows::pool_input;
  return with_rules(info, &pool_passes, &pool_work_problem, &check_pool);
}

}  // namespace tessera::arch
