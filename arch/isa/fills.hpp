// Fills: what an input holds in place of the counter-based generator's pseudorandom values
// (docs/tile-program.md, "Tensors"). Each kind is a file of fills/ (its struct and field list, its checks);
// the table below is the one list of them, which the text writer, comparison and the binary form walk.
#pragma once

#include <variant>

#include "arch/isa/fills/rope_table.hpp"
#include "arch/isa/fills/values.hpp"

namespace tessera::arch {

using Fill = std::variant<  // the fills table
    RopeTableFill,          //
    ValuesFill>;

}  // namespace tessera::arch
