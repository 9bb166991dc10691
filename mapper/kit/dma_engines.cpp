#include "mapper/kit/dma_engines.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "common/error.hpp"

namespace tessera::mapper {

std::vector<EngineGroup> split_engines(int engines, const std::vector<double>& bytes) {
  const size_t streams = bytes.size();
  TESSERA_ASSERT(streams >= 1 && engines >= static_cast<int>(streams), "an engine for every stream");
  std::vector<int> counts(streams, 1);
  int left = engines - static_cast<int>(streams);
  while (left > 0) {
    size_t best = streams;
    for (size_t i = 0; i < streams; ++i)
      if (best == streams || bytes[i] * counts[best] > bytes[best] * counts[i]) best = i;
    ++counts[best];
    --left;
  }
  std::vector<EngineGroup> groups(streams);
  int first = 0;
  for (size_t i = 0; i < streams; ++i) {
    groups[i] = EngineGroup{first, counts[i]};
    first += counts[i];
  }
  return groups;
}

TransferEngines transfer_engines(const arch::DmaSpec& dma, double load_bytes0, double load_bytes1) {
  TransferEngines engines;
  if (dma.engines == 1) return engines;  // every group engine 0
  if (dma.engines == 2) {
    engines.loads[1] = EngineGroup{1, 1};
    return engines;
  }
  const std::vector<EngineGroup> groups = split_engines(dma.engines, {load_bytes0, load_bytes1});
  engines.loads[0] = groups[0];
  engines.loads[1] = groups[1];
  engines.stores = EngineGroup{0, dma.engines};
  engines.stores_shared = false;
  return engines;
}

PassEngines pass_engines(const arch::DmaSpec& dma, double load_bytes, double store_bytes) {
  if (dma.engines == 1) return PassEngines{};
  const std::vector<EngineGroup> groups = split_engines(dma.engines, {load_bytes, store_bytes});
  return PassEngines{groups[0], groups[1]};
}

int64_t blocks_of(int64_t rows, int64_t row_bytes, const EngineGroup& group, const arch::DmaSpec& dma) {
  if (group.count < 2 || rows < 2) return 1;
  const double least = std::max(1.0, kSetupsPerBlock * dma.setup_cycles * dma.bytes_per_cycle);
  const double bytes = static_cast<double>(rows) * static_cast<double>(row_bytes);
  const auto by_bytes = static_cast<int64_t>(std::max(1.0, std::floor(bytes / least)));
  return std::min({static_cast<int64_t>(group.count), rows, by_bytes});
}

RowBlock row_block(int64_t rows, int64_t blocks, int64_t block) {
  TESSERA_ASSERT(blocks >= 1 && blocks <= rows && block >= 0 && block < blocks,
                 "a row block of its transfer");
  const int64_t base = rows / blocks, extra = rows % blocks;
  return RowBlock{block * base + std::min(block, extra), base + (block < extra ? 1 : 0)};
}

std::vector<DealtBlock> EngineDealer::deal(int64_t rows, int64_t row_bytes) {
  const int64_t count = blocks_of(rows, row_bytes, group_, dma_);
  std::vector<DealtBlock> blocks;
  blocks.reserve(static_cast<size_t>(count));
  for (int64_t b = 0; b < count; ++b)
    blocks.push_back(DealtBlock{row_block(rows, count, b), group_.engine(next_++)});
  return blocks;
}

std::vector<int> engines_of(const std::vector<DealtBlock>& blocks) {
  std::vector<int> engines;
  for (const DealtBlock& block : blocks)
    if (std::find(engines.begin(), engines.end(), block.engine) == engines.end())
      engines.push_back(block.engine);
  return engines;
}

int64_t spread_cycles(const arch::DmaSpec& dma, const EngineGroup& group, int64_t bytes, int64_t pieces) {
  const int64_t count = group.count, carriers = std::max<int64_t>(1, std::min(pieces, count));
  return (pieces + count - 1) / count * int64_t{dma.setup_cycles} +
         static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / dma.bytes_per_cycle / carriers));
}

std::string engine_semaphore(const std::string& name, const std::string& index, const EngineGroup& group,
                             int engine) {
  const int slot = engine - group.first;
  return slot == 0 ? name + index : fmt::format("{}_e{}{}", name, slot, index);
}

}  // namespace tessera::mapper
