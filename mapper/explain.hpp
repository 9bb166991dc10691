// Why one mapping loses to another, in the terms an operator engineer uses: which resource bounds it and how
// far it is from the winner there ("2.1x DRAM traffic on W", "62% of its PE time is fill and drain").
#pragma once

#include <string>

#include "mapper/cost.hpp"
#include "mapper/mapping.hpp"

namespace tessera::mapper {

// `loser_cycles` and `winner_cycles` are the figures being compared (simulated when known, else analytical):
// the loser's form says (Form::why_loses).
std::string why_loses(const Mapping& loser, const Cost& loser_cost, int64_t loser_cycles,
                      const Mapping& winner, const Cost& winner_cost, int64_t winner_cycles);

}  // namespace tessera::mapper
