// The kernel step (ops/vector_kernels.hpp) that computes a vector step of the tile program (arch::VecFn): the
// two lists name the same steps in the same order, checked here once for the vector unit and the PE array's
// output path.
#pragma once

#include "arch/isa/vec_op.hpp"
#include "ops/vector_kernels.hpp"

namespace tessera::sim {

inline ops::ChainStep chain_step_of(arch::VecFn fn) {
  using arch::VecFn;
  using ops::ChainStep;
  static_assert(static_cast<int>(VecFn::add) == static_cast<int>(ChainStep::add) &&
                    static_cast<int>(VecFn::mul) == static_cast<int>(ChainStep::mul) &&
                    static_cast<int>(VecFn::bias) == static_cast<int>(ChainStep::bias) &&
                    static_cast<int>(VecFn::relu) == static_cast<int>(ChainStep::relu) &&
                    static_cast<int>(VecFn::gelu) == static_cast<int>(ChainStep::gelu) &&
                    static_cast<int>(VecFn::gelu_tanh) == static_cast<int>(ChainStep::gelu_tanh) &&
                    static_cast<int>(VecFn::silu) == static_cast<int>(ChainStep::silu) &&
                    static_cast<int>(VecFn::swiglu) == static_cast<int>(ChainStep::swiglu) &&
                    static_cast<int>(VecFn::scale) == static_cast<int>(ChainStep::scale),
                "arch::VecFn and ops::ChainStep list the same steps in the same order");
  return static_cast<ChainStep>(fn);
}

}  // namespace tessera::sim
