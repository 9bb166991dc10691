// Lowering (DESIGN.md, "The flow of one run"): a mapping of a contraction stage becomes a tile program. Each
// core walks its tiles in the mapping's loop order; loads go to double buffers ahead of use, the PE array
// waits for them and frees them, finished output tiles drain through a store (or, with a k split, are reduced
// into the root core over the NoC first). Shared input tiles are multicast to the cores that use them as the
// mapping's plan says (plan.hpp); which regions a tile loads and which PE instruction computes it are the
// stage's (stage.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "arch/isa/program.hpp"
#include "mapper/mapping.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

// A contraction stage's program (ContractionStage::lower).
arch::Program lower_contraction(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                const arch::ArchSpec& spec, const std::string& program_name);

}  // namespace tessera::mapper
