#include "mapper/program_header.hpp"

#include <fmt/format.h>

#include <cstring>

namespace tessera::mapper {

void start_program(arch::Program& program, const std::string& name, const ops::Op& op, uint64_t seed,
                   const arch::ArchSpec& spec) {
  program.name = name;
  program.mesh = spec.mesh;
  arch::OpBinding binding;
  binding.kind = op.kind_name();
  for (const auto& [key, value] : ops::entry_of(op))
    if (key != "kind") binding.attributes[key] = value;
  binding.attributes["index"] = std::to_string(op.index);
  binding.attributes["seed"] = std::to_string(seed);
  program.op = binding;
}

int add_tensor(arch::Program& program, arch::TensorDecl tensor) {
  constexpr uint64_t kAlignment = 1 << 20;
  uint64_t address = 0;
  for (const arch::TensorDecl& earlier : program.tensors)
    address += (static_cast<uint64_t>(earlier.size_in_bytes()) + kAlignment - 1) / kAlignment * kAlignment;
  tensor.dram_address = tensor.role == arch::TensorRole::view ? 0 : address;
  program.tensors.push_back(std::move(tensor));
  return static_cast<int>(program.tensors.size() - 1);
}

arch::TensorDecl declared_tensor(const ops::TensorDesc& desc, uint64_t seed) {
  arch::TensorDecl tensor;
  tensor.name = desc.name;
  tensor.dtype = desc.dtype;
  tensor.rows = desc.rows;
  tensor.cols = desc.cols;
  tensor.role = desc.is_output ? arch::TensorRole::output : arch::TensorRole::input;
  if (!desc.is_output) tensor.seed = seed, tensor.generator_id = desc.tensor_id;
  if (desc.rope_table)
    tensor.rope_table = arch::RopeTableFill{desc.rope_table->position, desc.rope_table->base};
  return tensor;
}

void signal_every_core(arch::Program& program, const std::string& name, int cores, int self,
                       arch::Signals& signals) {
  for (int core = 0; core < cores; ++core)
    signals.push_back(arch::SemaphoreRef{program.semaphore_id(name), core == self ? arch::kSameCore : core});
}

int IndexedSemaphores::id(const char* name, int64_t index) {
  TESSERA_ASSERT(index >= 0, "a semaphore's index is not negative");
  // By address (the same literal), then by text (the same name from another literal): the new address is
  // remembered too.
  Named* named = nullptr;
  for (Named& known : names_)
    if (known.name == name) {
      named = &known;
      break;
    }
  if (!named) {
    for (Named& known : names_)
      if (std::strcmp(known.name, name) == 0) {
        named = &names_.emplace_back(Named{name, known.ids});
        break;
      }
  }
  if (!named) named = &names_.emplace_back(Named{name, {}});
  const auto at = static_cast<size_t>(index);
  if (at >= named->ids.size()) named->ids.resize(at + 1, -1);
  if (named->ids[at] < 0) named->ids[at] = program_.semaphore_id(fmt::format("{}[{}]", name, index));
  return named->ids[at];
}

arch::Instruction make_instruction(arch::QueueId queue, arch::Operation operation, arch::Waits waits,
                                   arch::Signals signals) {
  arch::Instruction made;
  made.queue = queue;
  made.operation = std::move(operation);
  made.waits = std::move(waits);
  made.signals = std::move(signals);
  return made;
}

}  // namespace tessera::mapper
