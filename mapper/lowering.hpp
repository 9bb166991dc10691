// Lowering (DESIGN.md, "The flow of one run"): a mapping becomes a tile program, by its form's lowering
// (mapper/form.hpp, Form::lower; a contraction's is mapper/contraction/lowering.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "arch/isa/program.hpp"
#include "mapper/mapping.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

// The program of any mapping: its form's lowering.
arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec,
                    const std::string& program_name);

// What every lowering of `op` at `seed` by a mapping of this form reads, computed now and cached
// (Form::prepare_lowering): before worker processes that lower candidates are forked.
void prepare_lowering(const ops::Op& op, uint64_t seed, const Mapping& mapping);

}  // namespace tessera::mapper
