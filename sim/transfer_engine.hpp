// A DMA engine or the NoC engine of one core: descriptors in order, each cut into bursts that are issued at
// the engine's rate with a bounded number in flight (a burst's slot is free
// again after its uncontended round trip plus what contention added to its transfer). The
// bursts bound for one DRAM channel (or one core) form a stream, booked along its path through the Fabric in
// one step (sim/fabric.hpp). The engine takes the next descriptor as soon as this one's bursts are issued;
// completion comes with the last stream.
#pragma once

#include <optional>

#include "sim/unit.hpp"

namespace tessera::sim {

class TransferEngine : public Unit {
 public:
  TransferEngine(sc_core::sc_module_name name, MachineState& machine, int core, arch::QueueId queue);

 protected:
  void execute(const arch::Instruction& instruction, int32_t position) override;
  void reset_run_state() override;

 private:
  struct Transfer;
  void run_load(const arch::DmaLoad& load, Transfer& transfer);
  void run_store(const arch::DmaStore& store, Transfer& transfer);
  void run_send(const arch::NocSend& send, Transfer& transfer);
  // The bursts of the current transfer bound for one DRAM channel: their issue window and bytes.
  struct Stream {
    Tick first = 0;
    Tick last = 0;
    int64_t bytes = 0;
    Tick latency = 0;  // the path's latencies (Fabric::load_latency and its siblings)
  };
  // Adds a burst issued now for `channel` to its stream; `latency` gives the path's latencies the first time.
  template <class Latency>
  void add_burst(int channel, int64_t bytes, bool through_dram, Latency&& latency);
  // After the transfer's streams are booked (done: the last one's end): holds the slots of its bursts for the
  // delay contention added, and clears the streams.
  void finish_streams(Tick done);

  // A transfer's DRAM bursts when they are laid out evenly: `rows` rows of `per_row` bursts of `bytes` each,
  // the first at `address`, a row's bursts back to back, rows `stride` bytes apart.
  struct BurstGrid {
    uint64_t address = 0;
    int64_t rows = 0;
    int64_t per_row = 0;
    int64_t bytes = 0;
    int64_t stride = 0;
  };
  // The grid split_into_bursts cuts `rows` rows of `row_bytes` from `address`, `stride` apart, into, when it
  // is one (bursts of one size that each stay inside their DRAM interleave block); nullopt otherwise.
  std::optional<BurstGrid> burst_grid(uint64_t address, int64_t rows, int64_t row_bytes,
                                      int64_t stride) const;
  // The grid of a plain tensor's region (for_each_dram_burst's bursts), when it is one.
  std::optional<BurstGrid> grid_of(const arch::TensorDecl& tensor, const arch::TensorRegion& region) const;
  // add_burst for every burst of `grid`, in issue order, in one tight loop.
  template <class Latency>
  void add_burst_grid(const BurstGrid& grid, bool through_dram, Latency&& latency_of);
  // The same for rows at any addresses (a row gather's): `rows` rows of `per_row` bursts of `bytes`, row r's
  // first at row_address(r).
  template <class RowAddress, class Latency>
  void add_burst_rows(int64_t rows, int64_t per_row, int64_t bytes, RowAddress&& row_address,
                      bool through_dram, Latency&& latency_of);
  // A row gather's region as rows of equal bursts, when every gathered row is cut alike (its rows a whole
  // number of DRAM interleave blocks apart): adds them and returns true; false adds nothing.
  template <class Latency>
  bool add_gather_bursts(const arch::TensorDecl& view, const arch::TensorDecl& source,
                         const arch::TensorRegion& region, Latency&& latency_of);

  // Calls burst(dram_address, bytes) for each burst of a tensor region, in issue order: per row, pieces of at
  // most burst_bytes that stay inside one DRAM interleave block.
  template <class Burst>
  void split_into_bursts(uint64_t dram_address, int64_t bytes, Burst&& burst);
  template <class Burst>
  void for_each_dram_burst(const arch::TensorDecl& tensor, const arch::TensorRegion& region, Burst&& burst);
  // The issue time of the next burst of `bytes`: the engine's rate and its in-flight limit allow it then.
  Tick issue_slot(int64_t bytes);
  Tick issue_ticks_of(int64_t bytes);
  Tick trip_ticks_of(int64_t bytes, bool through_dram);
  void retire(Tick done);

  const std::vector<int> this_core_;  // a load's destinations when it names none
  Tick engine_free_ = 0;              // the engine can issue its next burst from here
  std::vector<Tick> in_flight_;       // completion times of the last `outstanding_bursts` bursts (ring)
  size_t ring_next_ = 0;
  std::vector<Stream> streams_;  // per DRAM channel
  std::vector<int> touched_;     // channels with a stream in the current transfer, in first-burst order
  size_t transfer_bursts_ = 0;   // bursts of the current transfer
  Tick expected_done_ = 0;       // when its last burst would be back, uncontended
  double coding_ = 1.0;          // of its raw bytes, the fraction its bursts move (arch::coded_fraction)
  // The last burst size's issue ticks and uncontended transfer ticks (bursts mostly come in one size).
  int64_t issue_bytes_ = -1;
  Tick issue_ticks_ = 0;
  int64_t trip_bytes_ = -1;
  bool trip_through_dram_ = false;
  Tick trip_ticks_ = 0;
  std::vector<uint64_t> gather_addresses_;  // add_gather_bursts' rows, kept for their capacity
};

}  // namespace tessera::sim
