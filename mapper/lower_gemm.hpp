// Lowering (DESIGN.md, "The flow of one run"): a GEMM mapping becomes a tile program. Each core walks its
// tiles in the mapping's loop order; loads go to double buffers ahead of use, the PE array waits for them and
// frees them, finished output tiles drain through a store (or, with a k split, are reduced into the root core
// over the NoC first). Shared input tiles are multicast to the cores that use them when the NoC can.
#pragma once

#include <string>

#include "arch/isa/program.hpp"
#include "mapper/mapping.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

arch::Program lower_gemm(const ops::Op& op, uint64_t seed, const GemmMapping& mapping,
                         const arch::ArchSpec& spec, const std::string& program_name);

}  // namespace tessera::mapper
