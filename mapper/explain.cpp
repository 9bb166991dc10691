#include "mapper/explain.hpp"

#include <fmt/format.h>

namespace tessera::mapper {

std::string Form::why_loses(const Mapping&, const Cost&, int64_t loser_cycles, const Mapping&, const Cost&,
                            int64_t winner_cycles) const {
  return fmt::format(
      "{:.2f}x the cycles",
      winner_cycles > 0 ? static_cast<double>(loser_cycles) / static_cast<double>(winner_cycles) : 0.0);
}

std::string why_loses(const Mapping& loser, const Cost& loser_cost, int64_t loser_cycles,
                      const Mapping& winner, const Cost& winner_cost, int64_t winner_cycles) {
  TESSERA_ASSERT(loser.form != nullptr, "a mapping explained has a form");
  return loser.form->why_loses(loser, loser_cost, loser_cycles, winner, winner_cost, winner_cycles);
}

}  // namespace tessera::mapper
