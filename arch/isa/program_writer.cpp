// Writing the canonical text form of a tile program (docs/tile-program.md): the header, core lines and
// synchronisation here; each operation by its instruction kind (instruction_table.hpp).
#include <fmt/format.h>

#include <iterator>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "arch/isa/program_text.hpp"
#include "arch/isa/syntax.hpp"
#include "arch/isa/text_writer.hpp"

namespace tessera::arch {
namespace {

using namespace syntax;

class ProgramWriter : public LineWriter {
 public:
  explicit ProgramWriter(const Program& program) : LineWriter(program) {}

  std::string write() {
    check_names();
    write_header();
    for (const CoreProgram& core : program_.cores) {
      const Coord& coord = core.coord;
      TESSERA_ASSERT(coord.row >= 0 && coord.row < program_.mesh.rows && coord.col >= 0 &&
                         coord.col < program_.mesh.cols,
                     "a core block's coordinates lie inside the mesh");
      put("\ncore {},{}\n", coord.row, coord.col);
      for (const Instruction& instruction : core.instructions) write_instruction(instruction);
    }
    return fmt::to_string(out_);
  }

  // The instruction's line without indentation or newline: "pe ws a=0x0 ... ; wait a_full[0]".
  std::string instruction_line(const Instruction& instruction) {
    out_.clear();
    write_instruction_body(instruction);
    return fmt::to_string(out_);
  }

 private:
  // Whatever the reader could not read back the same is a bug of the program's maker.
  void check_names() const {
    TESSERA_ASSERT(is_free_text(program_.name), "a program's name is non-empty text without blanks or '#'");
    for (const TensorDecl& tensor : program_.tensors)
      TESSERA_ASSERT(is_name(tensor.name), "tensor names are [A-Za-z_][A-Za-z0-9_]*");
    for (const std::string& semaphore : program_.semaphores)
      TESSERA_ASSERT(is_semaphore_name(semaphore), "semaphore names are a name and decimal [index] suffixes");
    if (!program_.op) return;
    TESSERA_ASSERT(is_name(program_.op->kind), "an op kind is a name");
    for (const auto& [key, value] : program_.op->attributes)
      TESSERA_ASSERT(is_field_path(key) && is_free_text(value),
                     "op attributes are name[.name...]=text without blanks");
  }

  void write_header() {
    put("{} {}\n", kFormatMagic, kFormatVersion);
    put("name {}\n", program_.name);
    put("mesh {}x{}\n", program_.mesh.rows, program_.mesh.cols);
    if (program_.op) {
      put("op {}", program_.op->kind);
      for (const auto& [key, value] : program_.op->attributes) put(" {}={}", key, value);
      put("\n");
    }
    for (const TensorDecl& tensor : program_.tensors) write_tensor(tensor);
  }

  void write_tensor(const TensorDecl& tensor) {
    put("tensor {} {} {}x{} ", tensor.name, name_of(tensor.dtype), tensor.rows, tensor.cols);
    if (tensor.role == TensorRole::view) {
      TESSERA_ASSERT(tensor.view.has_value(), "a view tensor carries its view");
      std::visit([&](const auto& view) { write_view(view); }, *tensor.view);
      put("\n");
      return;
    }
    put("at 0x{:x} ", tensor.dram_address);
    if (tensor.role == TensorRole::input) {
      put("input seed={} id={}", tensor.seed, tensor.generator_id);
      // A filled input's line leaves its density out.
      if (tensor.fill)
        std::visit([&](const auto& fill) { write_fill(fill); }, *tensor.fill);
      else
        put("{}", density_text(tensor));
      put("\n");
    } else {
      put("output{}\n", density_text(tensor));
    }
  }

  // `view <kind> <source> key=value...`: the view's fields but its source, in its list's order.
  template <class View>
  void write_view(const View& view) {
    put("view {} {}", View::kKeyword, program_.tensors[static_cast<size_t>(view.source)].name);
    View::fields([&](const char* key, auto member, auto&&...) {
      if (std::string_view(key) != "source") write_option(key, view.*member);
    });
  }

  // ` fill=<kind> key=value...`: the fill's fields in its list's order.
  template <class Fill>
  void write_fill(const Fill& fill) {
    put(" fill={}", Fill::kKeyword);
    Fill::fields([&](const char* key, auto member, auto&&...) { write_option(key, fill.*member); });
  }

  template <class Value>
  void write_option(const char* key, const Value& value) {
    put(" {}=", key);
    if constexpr (std::is_same_v<Value, std::vector<int64_t>>)
      write_integer_list(value);
    else
      put("{}", value);
  }

  static std::string density_text(const TensorDecl& tensor) {
    return tensor.density < 1 ? fmt::format(" density={}", tensor.density) : std::string();
  }

  void write_instruction(const Instruction& instruction) {
    put("  ");
    write_instruction_body(instruction);
    put("\n");
  }

  void write_instruction_body(const Instruction& instruction) {
    TESSERA_ASSERT(queue_of(instruction.operation) == instruction.queue.kind,
                   "an operation is on a queue that runs it");
    put("{} ", name_of(instruction.queue));
    write_operation(*this, instruction.operation);
    if (!instruction.waits.empty()) {
      put(" ; wait");
      for (const SemaphoreWait& wait : instruction.waits) {
        put(" ");
        write_semaphore(wait.semaphore);
        if (wait.count != 1) put("*{}", wait.count);
      }
    }
    if (!instruction.signals.empty()) {
      put(" ; signal");
      for (const SemaphoreRef& signal : instruction.signals) {
        put(" ");
        write_semaphore(signal);
      }
    }
  }

  void write_semaphore(const SemaphoreRef& semaphore) {
    TESSERA_ASSERT(semaphore.id >= 0 && static_cast<size_t>(semaphore.id) < program_.semaphores.size(),
                   "a semaphore reference indexes Program::semaphores");
    put("{}", program_.semaphores[static_cast<size_t>(semaphore.id)]);
    if (semaphore.core != kSameCore) {
      put("@");
      write_core(semaphore.core);
    }
  }
};

}  // namespace

std::string write_program(const Program& program) {
  return ProgramWriter(program).write();
}

std::string format_instruction(const Program& program, const Instruction& instruction) {
  return ProgramWriter(program).instruction_line(instruction);
}

}  // namespace tessera::arch
