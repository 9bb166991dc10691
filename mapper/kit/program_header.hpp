// What every lowered tile program starts with, whatever its stages: its name, the mesh, the op line (the op's
// workload entry, index and seed), and its tensors one after another in DRAM.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

void start_program(arch::Program& program, const std::string& name, const ops::Op& op, uint64_t seed,
                   const arch::ArchSpec& spec);

// Adds a tensor after the others, on a 1 MiB boundary of DRAM (a multiple of any interleave; a view takes no
// DRAM); returns its index.
int add_tensor(arch::Program& program, arch::TensorDecl tensor);

// Signals of semaphore `name` on each of cores 0 .. cores-1 (the signalling core's own as kSameCore): one
// store's part in a barrier that every core of the pass after it waits on.
void signal_every_core(arch::Program& program, const std::string& name, int cores, int self,
                       arch::Signals& signals);

// The declaration of one of the op's tensors (ops::tensors_of): an input generated from `seed`, or an output.
arch::TensorDecl declared_tensor(const ops::TensorDesc& desc, uint64_t seed);

}  // namespace tessera::mapper
