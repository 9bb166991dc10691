// A DMA engine or the NoC engine of one core: descriptors in order, each cut into bursts that are issued at
// the engine's rate with a bounded number in flight and booked along their path through the Fabric. The
// engine takes the next descriptor as soon as this one's bursts are issued; completion comes with the last
// burst.
#pragma once

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
  // Calls burst(dram_address, bytes) for each burst of a tensor region, in issue order: per row, pieces of at
  // most burst_bytes that stay inside one DRAM interleave block.
  template <class Burst>
  void split_into_bursts(uint64_t dram_address, int64_t bytes, Burst&& burst);
  template <class Burst>
  void for_each_dram_burst(const arch::TensorDecl& tensor, const arch::TensorRegion& region, Burst&& burst);
  // The issue time of the next burst of `bytes`: the engine's rate and its in-flight limit allow it then.
  Tick issue_slot(int64_t bytes);
  void retire(Tick done);

  Tick engine_free_ = 0;         // the engine can issue its next burst from here
  std::vector<Tick> in_flight_;  // completion times of the last `outstanding_bursts` bursts (ring)
  size_t ring_next_ = 0;
};

}  // namespace tessera::sim
