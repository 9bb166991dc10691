#include "mapper/kit/program_header.hpp"

#include <fmt/format.h>

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
  if (desc.rope_table) tensor.fill = arch::RopeTableFill{desc.rope_table->position, desc.rope_table->base};
  tensor.density = desc.density;
  return tensor;
}

void signal_every_core(arch::Program& program, const std::string& name, int cores, int self,
                       arch::Signals& signals) {
  for (int core = 0; core < cores; ++core)
    signals.push_back(arch::SemaphoreRef{program.semaphore_id(name), core == self ? arch::kSameCore : core});
}

}  // namespace tessera::mapper
