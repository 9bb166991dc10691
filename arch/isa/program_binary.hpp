// The binary form of a tile program: what a worker process receives (sim/parallel_runs.cpp), in place of the
// text form (program_text.hpp), which costs about as much to write and read as the program takes to simulate
// (docs/design-notes.md, "Parallel candidates"). Not a file format: both ends are the same build of tessera,
// so numbers are in host order and there is no versioning beyond a check of the first bytes.
//
// Exact: read_program_binary(write_program_binary(p)) == p for every program (every tensor with its view,
// gathered rows, listed values and rope table; every instruction kind; the semaphore names; the op binding;
// the mesh). Instructions' `line` and the program's `source_file` do not travel (Program::operator== leaves
// them out). A truncated or corrupt message is an internal error (tessera::InternalError), never a read
// past its end: every count is checked against the bytes left before anything is allocated, every enum,
// flag and instruction kind against its range. What the program means (tensor and semaphore indices, SRAM
// ranges) is arch::check_program's to check, as for a program read from text.
#pragma once

#include <string>
#include <string_view>

#include "arch/isa/program.hpp"

namespace tessera::arch {

std::string write_program_binary(const Program& program);
// Appends the same bytes to `out` (after a header of the caller's, say, without copying the program's).
void append_program_binary(const Program& program, std::string& out);
Program read_program_binary(std::string_view bytes);

}  // namespace tessera::arch
