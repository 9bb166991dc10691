#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/program_check.hpp"

namespace tessera::arch {

namespace {

// An instruction's position in its queue, counted per queue as a core's instructions are walked: one counter
// per queue kind and DMA engine, a map only for engine numbers the machine does not have (an error the check
// of the instruction reports).
class QueuePositions {
 public:
  explicit QueuePositions(int engines)
      : counts_(static_cast<size_t>(kFirstEngine + std::max(0, engines)), 0) {}
  int64_t next(const QueueId& queue) {
    if (queue.kind != QueueKind::dma) return counts_[static_cast<size_t>(queue.kind)]++;
    const size_t slot = kFirstEngine + static_cast<size_t>(queue.index);
    if (queue.index >= 0 && slot < counts_.size()) return counts_[slot]++;
    return others_[queue.index]++;
  }

 private:
  static constexpr size_t kFirstEngine = 4;  // slots 0..3 by QueueKind (dma's unused)
  std::vector<int64_t> counts_;
  std::map<int, int64_t> others_;
};

// Counts by key in [0, size): a flat array where that is small, a hash map past it (a large mesh with many
// semaphore names).
class PairCounts {
 public:
  explicit PairCounts(size_t size) {
    if (size <= kFlatMost) flat_.assign(size, 0);
  }
  int64_t& operator[](size_t key) { return flat_.empty() ? sparse_[key] : flat_[key]; }

 private:
  static constexpr size_t kFlatMost = size_t{1} << 20;
  std::vector<int64_t> flat_;
  std::unordered_map<size_t, int64_t> sparse_;
};

class Checker {
 public:
  Checker(const Program& program, const ArchSpec& spec) : program_(program), spec_(spec) {}

  void run() {
    check_header();
    for (const CoreProgram& core : program_.cores) check_core(core);
    check_semaphore_balance();
  }

 private:
  // `line`: where the text wrote the header line at fault (0: unknown, a program built in memory).
  [[noreturn]] void fail_header(const std::string& field, const std::string& message, const std::string& hint,
                                int line = 0) const {
    throw InputError(SourceLocation{program_.source_file.empty() ? "(program)" : program_.source_file, line,
                                    line > 0 ? 1 : 0},
                     field, message, hint);
  }
  int tensor_line(size_t index) const {
    return index < program_.header_lines.tensors.size() ? program_.header_lines.tensors[index] : 0;
  }

  void check_header() const {
    if (program_.mesh.rows != spec_.mesh.rows || program_.mesh.cols != spec_.mesh.cols) {
      fail_header("mesh",
                  fmt::format("the program is for a {}x{} mesh but machine '{}' is {}x{}", program_.mesh.rows,
                              program_.mesh.cols, spec_.name, spec_.mesh.rows, spec_.mesh.cols),
                  "map the workload for this machine (tessera map --arch ...)", program_.header_lines.mesh);
    }
    for (size_t i = 0; i < program_.tensors.size(); ++i) {
      const TensorDecl& tensor = program_.tensors[i];
      if (tensor.rows <= 0 || tensor.cols <= 0)
        fail_header("tensor " + tensor.name, "a tensor needs at least one row and one column",
                    "give rows x cols of at least 1x1", tensor_line(i));
      if (tensor.role == TensorRole::view || tensor.view) check_view(tensor, i);
      if (tensor.fill) check_fill(tensor);
      if (tensor.role == TensorRole::input && is_integer(tensor.dtype) && tensor.dtype != DType::int8 &&
          !tensor.fill_if<ValuesFill>())
        fail_header("tensor " + tensor.name, "generated input tensors are fp32, bf16, fp16 or int8",
                    "int32 is an accumulator type; an int32 input lists its values (fill=values)",
                    tensor_line(i));
      if (tensor.dram_address > UINT64_MAX - static_cast<uint64_t>(tensor.size_in_bytes()))
        fail_header("tensor " + tensor.name,
                    fmt::format("its DRAM range 0x{:x} + {} B runs past the end of the 64-bit address space",
                                tensor.dram_address, tensor.size_in_bytes()),
                    "tensors live in DRAM at 0x0 upwards: place it lower", tensor_line(i));
      for (size_t j = 0; j < i; ++j) {
        const TensorDecl& other = program_.tensors[j];
        const uint64_t end = tensor.dram_address + static_cast<uint64_t>(tensor.size_in_bytes());
        const uint64_t other_end = other.dram_address + static_cast<uint64_t>(other.size_in_bytes());
        if (tensor.dram_address < other_end && other.dram_address < end) {
          fail_header(
              "tensor " + tensor.name,
              fmt::format("its DRAM range 0x{:x}..0x{:x} overlaps tensor {} (0x{:x}..0x{:x}, line {})",
                          tensor.dram_address, end, other.name, other.dram_address, other_end,
                          tensor_line(j)),
              "give each tensor its own address range", tensor_line(i));
        }
      }
    }
  }

  // The reader checks a fill as it reads it; programs built in memory get the same checks here.
  void check_fill(const TensorDecl& tensor) const {
    const std::string field = "tensor " + tensor.name;
    if (tensor.role != TensorRole::input)
      fail_header(field,
                  fmt::format("only an input is filled (fill={})",
                              std::visit([](const auto& fill) { return fill.kKeyword; }, *tensor.fill)),
                  "");
    if (const ValuesFill* values = tensor.fill_if<ValuesFill>())
      if (const std::optional<std::string> problem =
              values->check_fit(tensor.dtype, tensor.rows, tensor.cols))
        fail_header(field, *problem, "");
  }

  // The reader checks a view as it reads it; programs built in memory get the same checks here: the view's
  // source, its fields' signs as its field list states them, and its own checks (views/*.hpp).
  void check_view(const TensorDecl& tensor, size_t index) const {
    const std::string field = "tensor " + tensor.name;
    if (tensor.role != TensorRole::view) fail_header(field, "only a view tensor carries a view", "");
    if (!tensor.view) fail_header(field, "a view tensor without its view", "");
    std::visit([&](const auto& view) { check_view_of(tensor, index, view); }, *tensor.view);
  }

  template <class Kind>
  void check_view_of(const TensorDecl& tensor, size_t index, const Kind& view) const {
    const std::string field = "tensor " + tensor.name;
    // A source declared before the view: an input, or for a view that reads outputs any tensor but a view.
    if (view.source < 0 || static_cast<size_t>(view.source) >= index ||
        program_.tensors[view.source].role == TensorRole::view ||
        (!Kind::kReadsOutputs && program_.tensors[view.source].role != TensorRole::input))
      fail_header(
          field,
          Kind::kReadsOutputs
              ? fmt::format("the {} view's source is not an input or output declared before it",
                            Kind::kKeyword)
              : fmt::format("the {} view's source is not an input tensor declared before it", Kind::kKeyword),
          "");
    const TensorDecl& source = program_.tensors[view.source];
    if (source.dtype != tensor.dtype)
      fail_header(field,
                  fmt::format("the view is {} but its source {} is {}", name_of(tensor.dtype), source.name,
                              name_of(source.dtype)),
                  "");
    Kind::fields([&](const char* key, auto member, auto... rule) {
      if constexpr (std::is_same_v<std::decay_t<decltype(view.*member)>, int64_t>) {
        const bool zero_allowed = ((rule == FieldText::non_negative) || ... || false);
        if (view.*member < (zero_allowed ? 0 : 1))
          fail_header(field,
                      fmt::format("the {} view's {}={} is not {}", Kind::kKeyword, key, view.*member,
                                  zero_allowed ? "at least 0" : "positive"),
                      "");
      }
    });
    const ViewFit fit{tensor.rows, tensor.cols, source.name, source.rows, source.cols};
    ViewCheck mismatch = Kind::check_shape(fit);
    if (!mismatch) mismatch = view.check_fit(fit);
    if (mismatch) fail_header(field, mismatch->message, mismatch->hint);
  }

  void check_core(const CoreProgram& core) {
    if (core.coord.row < 0 || core.coord.row >= spec_.mesh.rows || core.coord.col < 0 ||
        core.coord.col >= spec_.mesh.cols) {
      fail_header(fmt::format("core {},{}", core.coord.row, core.coord.col),
                  fmt::format("no such core in the {}x{} mesh", spec_.mesh.rows, spec_.mesh.cols), "");
    }
    QueuePositions positions(spec_.core.dma.engines);
    for (const Instruction& instruction : core.instructions) {
      const int64_t position = positions.next(instruction.queue);
      const InstructionChecks checks(program_, spec_, core, instruction, position);
      check_instruction(checks, instruction);
      for (const SemaphoreWait& wait : instruction.waits) {
        if (wait.count <= 0) checks.fail("a wait consumes at least one signal");
        if (wait.semaphore.core != kSameCore) checks.core_index(wait.semaphore.core, "a wait");
        check_semaphore_id(checks, wait.semaphore.id);
      }
      for (const SemaphoreRef& signal : instruction.signals) {
        if (signal.core != kSameCore) checks.core_index(signal.core, "a signal");
        check_semaphore_id(checks, signal.id);
      }
    }
  }

  // Ids index the program's semaphore names (the reader makes them from the names; a program built in memory
  // must too).
  void check_semaphore_id(const InstructionChecks& checks, int id) const {
    if (id < 0 || static_cast<size_t>(id) >= program_.semaphores.size())
      checks.fail(fmt::format("semaphore id {} names none of the program's {} semaphores", id,
                              program_.semaphores.size()));
  }

  void check_instruction(const InstructionChecks& checks, const Instruction& instruction) const {
    const QueueId& queue = instruction.queue;
    if (queue.kind == QueueKind::dma && (queue.index < 0 || queue.index >= spec_.core.dma.engines)) {
      checks.fail(
          fmt::format("queue dma{} does not exist: machine '{}' has {} DMA engine{} per core", queue.index,
                      spec_.name, spec_.core.dma.engines, spec_.core.dma.engines == 1 ? "" : "s"),
          "use dma0..dma" + std::to_string(spec_.core.dma.engines - 1));
    }
    if (queue_of(instruction.operation) != queue.kind)
      checks.fail("this operation does not run on queue " + name_of(queue));
    check_operation(checks, instruction.operation);
  }

  // Statically, a semaphore waited on more often than it is signalled anywhere can never be satisfied.
  void check_semaphore_balance() const {
    // Counts per (core, semaphore), flat: core * semaphores + semaphore (cores and ids are checked by now).
    const auto semaphores = static_cast<int64_t>(program_.semaphores.size());
    const auto key_of = [&](int core, int id) {
      return static_cast<size_t>(static_cast<int64_t>(core) * semaphores + id);
    };
    const int64_t cores = static_cast<int64_t>(spec_.mesh.rows) * spec_.mesh.cols;
    PairCounts signals(static_cast<size_t>(cores * semaphores));  // posted in the whole program
    for (const CoreProgram& core : program_.cores) {
      const int issuer = core_index(core.coord, spec_.mesh);
      for (const Instruction& instruction : core.instructions) {
        for (const SemaphoreRef& ref : instruction.signals) {
          if (ref.core == kSameCore) {
            for_each_same_core_signal_target(instruction.operation, issuer,
                                             [&](int target) { ++signals[key_of(target, ref.id)]; });
          } else {
            ++signals[key_of(ref.core, ref.id)];
          }
        }
      }
    }
    PairCounts waited(static_cast<size_t>(cores * semaphores));
    for (const CoreProgram& core : program_.cores) {
      const int issuer = core_index(core.coord, spec_.mesh);
      QueuePositions positions(spec_.core.dma.engines);
      for (const Instruction& instruction : core.instructions) {
        const int64_t position = positions.next(instruction.queue);
        for (const SemaphoreWait& wait : instruction.waits) {
          const int owner_core = wait.semaphore.core == kSameCore ? issuer : wait.semaphore.core;
          const size_t key = key_of(owner_core, wait.semaphore.id);
          waited[key] += wait.count;
          const int64_t available = signals[key];
          if (waited[key] > available) {
            const Coord owner = core_coord(owner_core, spec_.mesh);
            InstructionChecks(program_, spec_, core, instruction, position)
                .fail(fmt::format(
                          "waits for {} of core {},{}, which the whole program signals {} time{} — this wait "
                          "needs signal number {}, so it can never proceed",
                          program_.semaphores[static_cast<size_t>(wait.semaphore.id)], owner.row, owner.col,
                          available, available == 1 ? "" : "s", waited[key]),
                      "add the missing signal, or drop the wait");
          }
        }
      }
    }
  }

  const Program& program_;
  const ArchSpec& spec_;
};

}  // namespace

void check_program(const Program& program, const ArchSpec& spec) {
  Checker(program, spec).run();
}

}  // namespace tessera::arch
