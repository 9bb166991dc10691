#include "mapper/kit/program_builder.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace tessera::mapper {

arch::SemaphoreRef Semaphores::on_engine(const std::string& name, int64_t index, const EngineGroup& group,
                                         int engine) const {
  return here(engine_semaphore(name, fmt::format("[{}]", index), group, engine));
}

int IndexedSemaphores::name(const std::string& text) {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i].text == text) return static_cast<int>(i);
  names_.push_back(Named{text, {}});
  return static_cast<int>(names_.size() - 1);
}

int IndexedSemaphores::id(int name, int64_t index) {
  TESSERA_ASSERT(index >= 0, "a semaphore's index is not negative");
  Named& named = names_[static_cast<size_t>(name)];
  const auto at = static_cast<size_t>(index);
  if (at >= named.ids.size()) named.ids.resize(at + 1, -1);
  if (named.ids[at] < 0) named.ids[at] = program_.semaphore_id(fmt::format("{}[{}]", named.text, index));
  return named.ids[at];
}

int IndexedSemaphores::id(const char* literal, int64_t index) {
  for (const auto& [address, handle] : literals_)
    if (address == literal) return id(handle, index);
  const int handle = name(literal);  // another literal of the same text shares its handle
  literals_.emplace_back(literal, handle);
  return id(handle, index);
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
