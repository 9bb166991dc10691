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

// The program of any mapping: its form's lowering (Form::lower).
arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec,
                    const std::string& program_name);
// A contraction stage's (ContractionStage::lower).
arch::Program lower_contraction(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                const arch::ArchSpec& spec, const std::string& program_name);

// What every lowering of `op` at `seed` by a mapping of this form reads, computed now and cached
// (Form::prepare_lowering): before worker processes that lower candidates are forked.
void prepare_lowering(const ops::Op& op, uint64_t seed, const Mapping& mapping);

}  // namespace tessera::mapper
