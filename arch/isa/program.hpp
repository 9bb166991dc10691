// The tile program: the instruction set the mapper emits and the simulator runs (DESIGN.md: mapper and sim
// meet only here). Per core, instructions go to in-order unit queues (DMA engines, the PE array, the NoC
// engine) and synchronise through counting semaphores; SRAM addresses, DMA descriptors and buffers are
// explicit. The instruction kinds are listed in instruction_table.hpp; docs/tile-program.md describes the
// text form (program_text.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "arch/isa/fields.hpp"
#include "arch/isa/fills.hpp"
#include "arch/isa/instruction_table.hpp"
#include "arch/isa/queue.hpp"
#include "arch/isa/views.hpp"
#include "arch/spec.hpp"
#include "arch/topology.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/inline_vector.hpp"

namespace tessera::arch {

// A semaphore of one core. core == kSameCore means the issuing core, or, on a multicast load, every
// destination core.
constexpr int kSameCore = -1;
struct SemaphoreRef {
  int id = 0;  // index into Program::semaphores
  int core = kSameCore;
  bool operator==(const SemaphoreRef& other) const { return id == other.id && core == other.core; }
};

// The most waits, and the most signals, one instruction of a program's text may list: a barrier over every
// core of the largest mesh needs one per core.
constexpr int kMaxSemaphoresPerInstruction = 4096;

struct SemaphoreWait {
  SemaphoreRef semaphore;
  int count = 1;  // consumes this many signals
  bool operator==(const SemaphoreWait& other) const {
    return semaphore == other.semaphore && count == other.count;
  }
};

// An instruction's waits and signals: one to four each, kept in the instruction (common/inline_vector.hpp).
using Waits = InlineVector<SemaphoreWait, 3>;
using Signals = InlineVector<SemaphoreRef, 4>;

struct Instruction {
  QueueId queue;
  Operation operation;
  Waits waits;      // all satisfied (in order) before the instruction starts
  Signals signals;  // posted when it completes
  int line = 0;     // line in the program text, 0 if built in memory

  bool operator==(const Instruction& other) const {
    return queue == other.queue && operation == other.operation && waits == other.waits &&
           signals == other.signals;
  }
};

struct CoreProgram {
  Coord coord;
  std::vector<Instruction> instructions;  // in program order; each queue runs its own subsequence in order
  bool operator==(const CoreProgram& other) const {
    return coord == other.coord && instructions == other.instructions;
  }
};

enum class TensorRole : uint8_t { input, output, view };

// A tensor in DRAM: inputs are filled by the counter-based generator (seed, generator id), or as their fill
// says (fills.hpp); outputs start zero. A view has no storage of its own (views.hpp; its rows and cols are
// the view's).
struct TensorDecl {
  std::string name;
  DType dtype = DType::fp32;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t dram_address = 0;
  TensorRole role = TensorRole::input;
  uint64_t seed = 0;
  uint32_t generator_id = 0;
  std::optional<Fill> fill;  // an input holding a rope table, or the values the program lists
  std::optional<View> view;  // role == view: what it gathers
  // Of an activation's values, the fraction that are non-zero (ops/density.hpp): a machine that run-length
  // codes DRAM traffic (dram.rlc) moves this tensor's regions in fewer bytes. `density=` in the text; 1:
  // dense.
  double density = 1.0;

  template <class Visit>
  static void fields(Visit&& visit) {
    visit("name", &TensorDecl::name), visit("dtype", &TensorDecl::dtype), visit("rows", &TensorDecl::rows);
    visit("cols", &TensorDecl::cols), visit("dram_address", &TensorDecl::dram_address);
    visit("role", &TensorDecl::role), visit("seed", &TensorDecl::seed);
    visit("generator_id", &TensorDecl::generator_id), visit("fill", &TensorDecl::fill);
    visit("view", &TensorDecl::view), visit("density", &TensorDecl::density);
  }

  int view_source() const { return source_of(*view); }
  // The view or fill as kind T, or null when the tensor has none of that kind.
  template <class T>
  const T* view_if() const {
    return view ? std::get_if<T>(&*view) : nullptr;
  }
  template <class T>
  T* view_if() {
    return view ? std::get_if<T>(&*view) : nullptr;
  }
  template <class T>
  const T* fill_if() const {
    return fill ? std::get_if<T>(&*fill) : nullptr;
  }
  template <class T>
  T* fill_if() {
    return fill ? std::get_if<T>(&*fill) : nullptr;
  }

  // DRAM bytes the tensor occupies (0 for a view).
  int64_t size_in_bytes() const { return role == TensorRole::view ? 0 : rows * cols * size_bytes(dtype); }
  bool operator==(const TensorDecl& other) const { return equal_fields(*this, other); }
};

// Which operator the program computes, so its output can be checked (the CLI turns it into an ops::Op).
struct OpBinding {
  std::string kind;                               // "gemm"
  std::map<std::string, std::string> attributes;  // name, index, m, n, k, dtype, seed, ...
  bool operator==(const OpBinding& other) const {
    return kind == other.kind && attributes == other.attributes;
  }
};

struct Program {
  std::string name;
  MeshSpec mesh;
  std::optional<OpBinding> op;
  std::vector<TensorDecl> tensors;
  std::vector<std::string> semaphores;  // names; SemaphoreRef::id indexes this
  std::vector<CoreProgram> cores;       // cores with instructions, in the order written
  std::string source_file;              // where it was read from ("" if built in memory)
  // Where the text wrote the header's lines, for located errors about them; 0 (or absent) if built in memory.
  // Not part of what the program computes: neither compared nor sent to workers.
  struct HeaderLines {
    int mesh = 0;
    int op = 0;
    std::vector<int> tensors;  // one per tensor, in order
  } header_lines;

  // Finds or adds; constant time (semaphore_index_), where the mappers name one to four semaphores an
  // instruction.
  int semaphore_id(const std::string& name);
  int tensor_id(const std::string& name) const;  // -1 if absent
  int64_t instruction_count() const;
  // Renumbers semaphores in the order the text reader meets them (cores in order, waits before signals) and
  // drops unused names, so that read_program(write_program(p)) == p.
  void number_semaphores_by_appearance();

  // Equal programs compute the same thing the same way; where they were read from does not count.
  bool operator==(const Program& other) const {
    return name == other.name && mesh.rows == other.mesh.rows && mesh.cols == other.mesh.cols &&
           op == other.op && tensors == other.tensors && semaphores == other.semaphores &&
           cores == other.cores;
  }

  // Name -> id of `semaphores`, semaphore_id's alone (public only to keep Program an aggregate): built again
  // whenever its size is not that of `semaphores` (names are only ever added, or renumbered by
  // number_semaphores_by_appearance, which clears it). Neither compared nor sent.
  std::unordered_map<std::string, int> semaphore_index_;
};

// Where an instruction is, for error messages: "core 0,1 pe #3" plus the program file and line.
std::string describe_instruction(const Program& program, const CoreProgram& core,
                                 const Instruction& instruction, int64_t position);
SourceLocation location_of(const Program& program, const Instruction& instruction);

}  // namespace tessera::arch
