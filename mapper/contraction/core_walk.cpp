#include "mapper/contraction/core_walk.hpp"

#include <algorithm>
#include <utility>

namespace tessera::mapper {

int logical_to_core(int im, int in, int ik, const Mapping& mapping) {
  return (ik * mapping.split_m + im) * mapping.split_n + in;
}

std::vector<TileIteration> iterations_of(const Mapping& mapping, const DimPartition (&parts)[3],
                                         const int (&place)[3], int64_t groups) {
  int64_t first[3], count[3];
  for (int d = 0; d < 3; ++d) {
    first[d] = parts[d].first_tile(place[d]);
    count[d] = parts[d].tile_count(place[d]);
  }
  std::vector<TileIteration> iterations;
  const int outer = static_cast<int>(mapping.order[0]), middle = static_cast<int>(mapping.order[1]),
            inner = static_cast<int>(mapping.order[2]);
  int64_t index[3];
  for (int64_t group = 0; group < groups; ++group)
    for (int64_t a = 0; a < count[outer]; ++a)
      for (int64_t b = 0; b < count[middle]; ++b)
        for (int64_t c = 0; c < count[inner]; ++c) {
          index[outer] = first[outer] + a;
          index[middle] = first[middle] + b;
          index[inner] = first[inner] + c;
          iterations.push_back(TileIteration{index[0], index[1], index[2], group});
        }
  return iterations;
}

std::vector<Residency> residencies(const std::vector<TileIteration>& iterations, int tensor) {
  std::vector<Residency> runs;
  for (size_t i = 0; i < iterations.size(); ++i) {
    const TileIteration& it = iterations[i];
    const int64_t a = tensor == kW ? it.k_tile : it.m_tile;
    const int64_t b = tensor == kA ? it.k_tile : it.n_tile;
    if (runs.empty() || runs.back().key_a != a || runs.back().key_b != b || runs.back().group != it.group)
      runs.push_back(Residency{a, b, it.group, i, i});
    runs.back().last = i;
  }
  return runs;
}

std::vector<arch::Instruction> in_key_order(std::vector<Keyed>& keyed) {
  // Sorted through a compact copy of the keys: an instruction is ~340 bytes, and comparing in place reads a
  // cache line per comparison. The instructions themselves are moved once.
  struct SortKey {
    double key;
    size_t index;
  };
  std::vector<SortKey> sorted(keyed.size());
  for (size_t i = 0; i < sorted.size(); ++i) sorted[i] = SortKey{keyed[i].key, i};
  std::sort(sorted.begin(), sorted.end(), [](const SortKey& a, const SortKey& b) {
    return a.key != b.key ? a.key < b.key : a.index < b.index;
  });
  std::vector<arch::Instruction> instructions;
  instructions.reserve(keyed.size());
  for (const SortKey& at : sorted) instructions.push_back(std::move(keyed[at.index].instruction));
  keyed = {};
  return instructions;
}

}  // namespace tessera::mapper
