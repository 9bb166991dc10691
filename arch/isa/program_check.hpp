// Checks a program against a machine before it runs: coordinates, queues, address ranges, tensor regions,
// dataflow/dtype support, and that no semaphore is waited on more often than it is signalled anywhere. The
// checks of one instruction kind are in its own file (instruction_table.hpp).
#pragma once

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"

namespace tessera::arch {

// Throws InputError naming the instruction.
void check_program(const Program& program, const ArchSpec& spec);

}  // namespace tessera::arch
