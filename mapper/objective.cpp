#include "mapper/objective.hpp"

namespace tessera::mapper {

const char* name_of(Objective objective) {
  switch (objective) {
    case Objective::cycles:
      return "cycles";
    case Objective::energy:
      return "energy";
    case Objective::edp:
      return "edp";
    case Objective::dram:
      return "dram";
  }
  return "cycles";
}

bool parse_objective(std::string_view text, Objective& objective) {
  for (Objective candidate : {Objective::cycles, Objective::energy, Objective::edp, Objective::dram})
    if (text == name_of(candidate)) {
      objective = candidate;
      return true;
    }
  return false;
}

double objective_value(Objective objective, double cycles, double energy, double dram_bytes) {
  switch (objective) {
    case Objective::cycles:
      return cycles;
    case Objective::energy:
      return energy;
    case Objective::edp:
      return energy * cycles;
    case Objective::dram:
      return dram_bytes;
  }
  return cycles;
}

}  // namespace tessera::mapper
