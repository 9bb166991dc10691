// The text form of a tile program (docs/tile-program.md): the reader (program_reader.cpp) and the writer
// (program_writer.cpp); each instruction kind reads and writes its own operation (instruction_table.hpp).
#pragma once

#include <string>

#include "arch/isa/program.hpp"

namespace tessera::arch {

// read_program throws InputError with file:line:column.
Program read_program(const std::string& text, const std::string& file_name);
Program read_program_file(const std::string& path);
std::string write_program(const Program& program);
// One instruction as its program line reads, without indentation (for trace labels and messages).
std::string format_instruction(const Program& program, const Instruction& instruction);

}  // namespace tessera::arch
