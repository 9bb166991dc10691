#include "sim/unit_table.hpp"

#include "sim/pe_unit.hpp"
#include "sim/transfer_engine.hpp"
#include "sim/vector_unit.hpp"

namespace tessera::sim {

namespace {
int one(const arch::ArchSpec&) {
  return 1;
}
int vector_units(const arch::ArchSpec& spec) {
  return spec.core.vector ? 1 : 0;
}
int dma_engines(const arch::ArchSpec& spec) {
  return spec.core.dma.engines;
}
std::unique_ptr<Unit> make_pe_array(sc_core::sc_module_name name, MachineState& machine, int core,
                                    arch::QueueId) {
  return std::make_unique<PeUnit>(name, machine, core);
}
std::unique_ptr<Unit> make_vector_unit(sc_core::sc_module_name name, MachineState& machine, int core,
                                       arch::QueueId) {
  return std::make_unique<VectorUnit>(name, machine, core);
}
std::unique_ptr<Unit> make_transfer_engine(sc_core::sc_module_name name, MachineState& machine, int core,
                                           arch::QueueId queue) {
  return std::make_unique<TransferEngine>(name, machine, core, queue);
}
}  // namespace

const std::vector<UnitKind>& unit_table() {
  static const std::vector<UnitKind> table = {
      {arch::QueueKind::pe, &one, &make_pe_array},
      {arch::QueueKind::dma, &dma_engines, &make_transfer_engine},
      {arch::QueueKind::noc, &one, &make_transfer_engine},
      {arch::QueueKind::vec, &vector_units, &make_vector_unit},
  };
  return table;
}

}  // namespace tessera::sim
