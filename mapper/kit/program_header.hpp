// What every lowered tile program starts with, whatever its stages: its name, the mesh, the op line (the op's
// workload entry, index and seed), and its tensors one after another in DRAM.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

void start_program(arch::Program& program, const std::string& name, const ops::Op& op, uint64_t seed,
                   const arch::ArchSpec& spec);

// Adds a tensor after the others, on a 1 MiB boundary of DRAM (a multiple of any interleave; a view takes no
// DRAM); returns its index.
int add_tensor(arch::Program& program, arch::TensorDecl tensor);

// Signals of semaphore `name` on each of cores 0 .. cores-1 (the signalling core's own as kSameCore): one
// store's part in a barrier that every core of the pass after it waits on.
void signal_every_core(arch::Program& program, const std::string& name, int cores, int self,
                       arch::Signals& signals);

// The declaration of one of the op's tensors (ops::tensors_of): an input generated from `seed`, or an output.
arch::TensorDecl declared_tensor(const ops::TensorDesc& desc, uint64_t seed);

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
