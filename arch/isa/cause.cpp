#include "arch/isa/cause.hpp"

namespace tessera::arch {

const char* name_of(Cause cause) {
  switch (cause) {
    case Cause::busy:
      return "busy";
    case Cause::input_starvation:
      return "input_starvation";
    case Cause::output_backpressure:
      return "output_backpressure";
    case Cause::noc:
      return "noc";
    case Cause::bank_conflict:
      return "bank_conflict";
    case Cause::sync:
      return "sync";
    case Cause::fill_drain:
      return "fill_drain";
    case Cause::vector:
      return "vector";
    case Cause::imbalance:
      return "imbalance";
  }
  return "?";
}

const std::array<Cause, kCauses>& all_causes() {
  static const std::array<Cause, kCauses> causes = {
      Cause::busy,       Cause::input_starvation, Cause::output_backpressure,
      Cause::noc,        Cause::bank_conflict,    Cause::sync,
      Cause::fill_drain, Cause::vector,           Cause::imbalance};
  return causes;
}

}  // namespace tessera::arch
