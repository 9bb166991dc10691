// The small language every lowering writes its programs in: a core's queues, its semaphores by name (the
// core's own or another core's, a pass's prefix, one per engine of a group, "name[index]" interned), the
// waits and signals on them, and instructions made of a queue, an operation, waits and signals. A lowering
// names semaphores in the order it uses them; the program numbers them in that order (semaphore_id), so the
// same calls in the same order give the same program.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arch/isa/program.hpp"
#include "mapper/kit/dma_engines.hpp"

namespace tessera::mapper {

// A core's queues: its PE array, vector unit and NoC port (one each), and its DMA engines.
inline arch::QueueId pe_queue() {
  return arch::QueueId{arch::QueueKind::pe, 0};
}
inline arch::QueueId vec_queue() {
  return arch::QueueId{arch::QueueKind::vec, 0};
}
inline arch::QueueId noc_queue() {
  return arch::QueueId{arch::QueueKind::noc, 0};
}
inline arch::QueueId dma_queue(int engine) {
  return arch::QueueId{arch::QueueKind::dma, engine};
}

// A lowering's semaphores by name, each name with the lowering's prefix in front (a pass's "a_" or "c_";
// none by default) and found in the program on first use.
class Semaphores {
 public:
  explicit Semaphores(arch::Program& program, std::string prefix = {})
      : program_(program), prefix_(std::move(prefix)) {}
  // Semaphore `name` of the core that signals or waits on it.
  arch::SemaphoreRef here(const std::string& name) const { return at(name, arch::kSameCore); }
  // Semaphore `name` of core `core` (arch::kSameCore: the core's own).
  arch::SemaphoreRef at(const std::string& name, int core) const {
    return arch::SemaphoreRef{program_.semaphore_id(prefix_ + name), core};
  }
  // A wait for `count` signals of the core's own semaphore `name`.
  arch::SemaphoreWait wait(const std::string& name, int count = 1) const {
    return arch::SemaphoreWait{here(name), count};
  }
  // Engine `engine`'s semaphore `name` of `group` for buffer `index` (engine_semaphore: "name[index]" on
  // the group's first engine, "name_e<slot>[index]" on the others).
  arch::SemaphoreRef on_engine(const std::string& name, int64_t index, const EngineGroup& group,
                               int engine) const;

 private:
  arch::Program& program_;
  std::string prefix_;
};

// Semaphore ids of a program by name and index, "name[index]": each formatted and looked up in the program
// once. A lowering names one to four semaphores an instruction, and formatting each name every time was a
// fifth of attention's lowering (comparing names, most of the GEMM lowering's). A name is interned once
// (`name`: a handle) and its ids then found by handle and index; `id` by a literal finds the literal's
// handle by its address first.
class IndexedSemaphores {
 public:
  explicit IndexedSemaphores(arch::Program& program) : program_(program) {}
  // The handle of `text`, interned on first use.
  int name(const std::string& text);
  const std::string& text(int name) const { return names_[static_cast<size_t>(name)].text; }
  // The program's id of "text[index]".
  int id(int name, int64_t index);
  // The same by a name that outlives this object (a literal).
  int id(const char* literal, int64_t index);
  // The core's own "text[index]".
  arch::SemaphoreRef here(const char* literal, int64_t index) {
    return arch::SemaphoreRef{id(literal, index), arch::kSameCore};
  }
  // A wait for `count` signals of the core's own "text[index]".
  arch::SemaphoreWait wait(const char* literal, int64_t index, int count = 1) {
    return arch::SemaphoreWait{here(literal, index), count};
  }
  // "text[index]" of handle `name`, of core `core` (arch::kSameCore: the core's own).
  arch::SemaphoreRef at(int name, int64_t index, int core = arch::kSameCore) {
    return arch::SemaphoreRef{id(name, index), core};
  }

 private:
  struct Named {
    std::string text;
    std::vector<int> ids;  // per index, -1 until used
  };
  arch::Program& program_;
  std::vector<Named> names_;
  std::vector<std::pair<const char*, int>> literals_;  // a literal's address -> its handle
};

// An instruction on `queue` with its waits and the semaphores it signals when it completes.
arch::Instruction make_instruction(arch::QueueId queue, arch::Operation operation, arch::Waits waits,
                                   arch::Signals signals);

}  // namespace tessera::mapper
