// What the mapper ranks mappings by and a run picks its winner by (`--objective`): the fewest cycles (the
// default), the least energy, the least energy-delay product, or the fewest DRAM bytes. Ties fall to cycles,
// then DRAM bytes, then the mapping's place in the enumeration (mapper/search.hpp).
#pragma once

#include <string>
#include <string_view>

namespace tessera::mapper {

enum class Objective { cycles, energy, edp, dram };

const char* name_of(Objective objective);
// "cycles", "energy", "edp", "dram"; false if the text names none.
bool parse_objective(std::string_view text, Objective& objective);
inline constexpr const char* kObjectiveNames = "cycles, energy, edp or dram";

// The figure `objective` minimises, from a mapping's cycles, energy and DRAM bytes (in any one unit each).
double objective_value(Objective objective, double cycles, double energy, double dram_bytes);

}  // namespace tessera::mapper
