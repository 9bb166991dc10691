#include "mapper/kit/tiling.hpp"

namespace tessera::mapper {

const char* name_of(Dim dim) {
  switch (dim) {
    case Dim::m:
      return "m";
    case Dim::n:
      return "n";
    case Dim::k:
      return "k";
  }
  return "?";
}

}  // namespace tessera::mapper
