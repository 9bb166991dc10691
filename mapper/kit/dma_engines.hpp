// How a core's DMA engines share its transfers, decided here once and read by the cost model and every
// lowering (docs/design-notes.md, "DMA engines"). Each stream of transfers (a GEMM's A loads, W loads and
// stores) gets a group of engines:
// - one engine: every stream on it;
// - two: the loads of one operand on each, the stores with the operand that loads fewer bytes;
// - three or more: a group per load stream, sized by the bytes it moves (split_engines, which keeps the
//   busiest engine's bytes fewest), and the stores dealt round all engines: a store comes in bursts (the last
//   one of a program exposed, nothing left to overlap it), a load stream is steady.
// A pass of loads and stores (a vector pass) splits its engines between the two by their bytes.
// A transfer is cut into blocks of whole rows, one per engine of its group, so that all of them carry it at
// once, as long as each block's bytes take its engine at least kSetupsPerBlock setups' time (a shorter block
// spends more on its descriptor than the split saves). A one-row transfer stays whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/spec.hpp"

namespace tessera::mapper {

// The engines first .. first + count - 1.
struct EngineGroup {
  int first = 0;
  int count = 1;
  // The engine that takes block (or transfer) i of a sequence dealt round the group.
  int engine(int64_t i) const { return first + static_cast<int>(i % count); }
  bool operator==(const EngineGroup& other) const { return first == other.first && count == other.count; }
};

// `engines` (at least as many as streams) split into consecutive groups, one per stream, each of at least
// one engine, the rest one at a time to the stream with the most bytes per engine (which leaves the busiest
// engine the fewest bytes; ties to the earlier stream).
std::vector<EngineGroup> split_engines(int engines, const std::vector<double>& bytes);

// The groups of a load stream pair and their stores (a GEMM's A and W; a pass's inputs and outputs).
struct TransferEngines {
  EngineGroup loads[2];
  EngineGroup stores;         // with three engines or more: all of them
  bool stores_shared = true;  // with two engines or fewer: on the group of the lighter loads
  const EngineGroup& store_group(double first_bytes, double second_bytes) const {
    if (!stores_shared) return stores;
    return first_bytes <= second_bytes ? loads[0] : loads[1];
  }
};

// The groups for two streams of loads of these bytes, and their stores.
TransferEngines transfer_engines(const arch::DmaSpec& dma, double load_bytes0, double load_bytes1);

// The groups of a pass of loads and stores (a vector pass: X and Y in, O out): one engine for both, or the
// engines split between them by their bytes.
struct PassEngines {
  EngineGroup loads;
  EngineGroup stores;
};
PassEngines pass_engines(const arch::DmaSpec& dma, double load_bytes, double store_bytes);

// A block's data must take its engine this many setups at least.
constexpr int64_t kSetupsPerBlock = 4;

// How many blocks a transfer of `rows` rows of `row_bytes` each is cut into on `group`: at most one per
// engine and per row, and none shorter than kSetupsPerBlock setups' worth of bytes at the engine's rate.
int64_t blocks_of(int64_t rows, int64_t row_bytes, const EngineGroup& group, const arch::DmaSpec& dma);

// Rows [first, first + rows) of block `block` of `blocks` (the first `rows % blocks` blocks one row more).
struct RowBlock {
  int64_t first = 0;
  int64_t rows = 0;
};
RowBlock row_block(int64_t rows, int64_t blocks, int64_t block);

// A block of a dealt transfer: its rows and the engine that carries it.
struct DealtBlock {
  RowBlock rows;
  int engine = 0;
};

// A stream of transfers on one group (an attention core's Q, K and V loads; a run of paged K rows a
// transfer): each cut into row blocks (blocks_of), the blocks of successive transfers dealt round the group's
// engines in turn, each transfer starting on the engine after the last one's last block, so that many short
// transfers (a paged cache's runs) still reach every engine. One engine: every transfer whole on it.
class EngineDealer {
 public:
  EngineDealer(const EngineGroup& group, const arch::DmaSpec& dma) : group_(group), dma_(dma) {}
  std::vector<DealtBlock> deal(int64_t rows, int64_t row_bytes);
  const EngineGroup& group() const { return group_; }

 private:
  EngineGroup group_;
  arch::DmaSpec dma_;
  int64_t next_ = 0;
};

// The distinct engines that carry `blocks`, in the order they first appear.
std::vector<int> engines_of(const std::vector<DealtBlock>& blocks);

// The cycles of `pieces` blocks of `bytes` in all dealt round `group`: the busiest engine's setups and the
// bytes over the engines that carry them (one engine: every setup and every byte on it).
int64_t spread_cycles(const arch::DmaSpec& dma, const EngineGroup& group, int64_t bytes, int64_t pieces);

// Engine `engine`'s semaphore `name` of `group`, then `index` ("[1]", or none): the group's first engine
// keeps the plain name, the others `<name>_e<slot>`. Where several engines wait for one kind of signal (a
// buffer's free), each waits on its own: on a shared one an engine could take another's signal.
std::string engine_semaphore(const std::string& name, const std::string& index, const EngineGroup& group,
                             int engine);

}  // namespace tessera::mapper
