#include "mapper/cost.hpp"

namespace tessera::mapper {

const char* name_of(Bound bound) {
  switch (bound) {
    case Bound::compute:
      return "compute";
    case Bound::dram:
      return "dram";
    case Bound::dma:
      return "dma";
    case Bound::noc:
      return "noc";
    case Bound::sram:
      return "sram";
    case Bound::vector:
      return "vector";
  }
  return "?";
}

}  // namespace tessera::mapper
