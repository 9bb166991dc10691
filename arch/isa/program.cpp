#include "arch/isa/program.hpp"

#include <fmt/format.h>

namespace tessera::arch {

int Program::semaphore_id(const std::string& semaphore_name) {
  if (semaphore_index_.size() != semaphores.size()) {
    semaphore_index_.clear();
    for (size_t i = 0; i < semaphores.size(); ++i)
      semaphore_index_.emplace(semaphores[i], static_cast<int>(i));  // the first of a repeated name
  }
  const auto [found, added] = semaphore_index_.emplace(semaphore_name, static_cast<int>(semaphores.size()));
  if (added) semaphores.push_back(semaphore_name);
  return found->second;
}

int Program::tensor_id(const std::string& tensor_name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == tensor_name) return static_cast<int>(i);
  return -1;
}

int64_t Program::instruction_count() const {
  int64_t count = 0;
  for (const CoreProgram& core : cores) count += static_cast<int64_t>(core.instructions.size());
  return count;
}

void Program::number_semaphores_by_appearance() {
  std::vector<int> renumbered(semaphores.size(), -1);
  std::vector<std::string> names;
  auto number = [&](SemaphoreRef& ref) {
    if (renumbered[ref.id] < 0) {
      renumbered[ref.id] = static_cast<int>(names.size());
      names.push_back(semaphores[ref.id]);
    }
    ref.id = renumbered[ref.id];
  };
  for (CoreProgram& core : cores)
    for (Instruction& instruction : core.instructions) {
      for (SemaphoreWait& wait : instruction.waits) number(wait.semaphore);
      for (SemaphoreRef& signal : instruction.signals) number(signal);
    }
  semaphores = std::move(names);
  semaphore_index_.clear();
}

std::string describe_instruction(const Program& program, const CoreProgram& core,
                                 const Instruction& instruction, int64_t position) {
  // position counts the instructions of the same queue on that core, from 0
  return fmt::format("core {},{} {} #{}", core.coord.row, core.coord.col, name_of(instruction.queue),
                     position);
}

SourceLocation location_of(const Program& program, const Instruction& instruction) {
  return SourceLocation{program.source_file.empty() ? "(program)" : program.source_file, instruction.line, 0};
}

}  // namespace tessera::arch
