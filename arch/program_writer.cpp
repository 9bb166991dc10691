// Writing the canonical text form of a tile program (docs/tile-program.md).
#include <fmt/format.h>

#include <iterator>
#include <string_view>

#include "arch/program.hpp"
#include "arch/program_syntax.hpp"

namespace tessera::arch {
namespace {

using namespace syntax;

bool runs_on(QueueKind kind, const Operation& operation) {
  switch (kind) {
    case QueueKind::dma:
      return std::holds_alternative<DmaLoad>(operation) || std::holds_alternative<DmaStore>(operation);
    case QueueKind::pe:
      return std::holds_alternative<PeMatmul>(operation) || std::holds_alternative<PeConv>(operation);
    case QueueKind::noc:
      return std::holds_alternative<NocSend>(operation);
  }
  return false;
}

class ProgramWriter {
 public:
  explicit ProgramWriter(const Program& program) : program_(program) {}

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
      TESSERA_ASSERT(is_name(key) && is_free_text(value), "op attributes are name=text without blanks");
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
    for (const TensorDecl& tensor : program_.tensors) {
      put("tensor {} {} {}x{} ", tensor.name, name_of(tensor.dtype), tensor.rows, tensor.cols);
      if (tensor.role == TensorRole::view && tensor.block_diagonal) {
        const BlockDiagonalView& view = *tensor.block_diagonal;
        put("view blockdiag {} groups={} packed={} window={} group_c={} group_k={}\n",
            program_.tensors[static_cast<size_t>(view.source)].name, view.groups, view.packed, view.window,
            view.group_c, view.group_k);
        continue;
      }
      if (tensor.role == TensorRole::view) {
        TESSERA_ASSERT(tensor.im2col.has_value(), "a view tensor carries its im2col view");
        const Im2colView& view = *tensor.im2col;
        put("view im2col {} n={} h={} w={} c={} r={} s={} stride={} pad={} dilation={} groups={}\n",
            program_.tensors[static_cast<size_t>(view.source)].name, view.n, view.h, view.w, view.c, view.r,
            view.s, view.stride, view.pad, view.dilation, view.groups);
        continue;
      }
      put("at 0x{:x} ", tensor.dram_address);
      if (tensor.role == TensorRole::input)
        put("input seed={} id={}\n", tensor.seed, tensor.generator_id);
      else
        put("output\n");
    }
  }

  void write_instruction(const Instruction& instruction) {
    put("  ");
    write_instruction_body(instruction);
    put("\n");
  }

  void write_instruction_body(const Instruction& instruction) {
    TESSERA_ASSERT(runs_on(instruction.queue.kind, instruction.operation),
                   "an operation is on a queue that runs it");
    put("{} ", name_of(instruction.queue));
    std::visit([this](const auto& operation) { write_operation(operation); }, instruction.operation);
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

  void write_operation(const DmaLoad& load) {
    put("load ");
    write_region(load.source);
    put(" -> 0x{:x}", load.sram_address);
    write_pitch("pitch", load.sram_pitch_bytes);
    if (!load.destinations.empty()) {
      put(" to");
      for (int core : load.destinations) {
        put(" ");
        write_core(core);
      }
    }
  }

  void write_operation(const DmaStore& store) {
    put("store 0x{:x}", store.sram_address);
    write_pitch("pitch", store.sram_pitch_bytes);
    put(" -> ");
    write_region(store.destination);
    if (store.accumulate) put(" add");
  }

  void write_operation(const PeMatmul& matmul) {
    put("{} a=0x{:x} w=0x{:x} o=0x{:x} m={} n={} k={} dtype={} acc={}", name_of(matmul.dataflow),
        matmul.a_address, matmul.w_address, matmul.o_address, matmul.m, matmul.n, matmul.k,
        name_of(matmul.dtype), matmul.accumulate ? 1 : 0);
    write_pitch("a_pitch", matmul.a_pitch_bytes);
    write_pitch("w_pitch", matmul.w_pitch_bytes);
    write_pitch("o_pitch", matmul.o_pitch_bytes);
  }

  void write_operation(const PeConv& conv) {
    put("conv {} a=0x{:x} w=0x{:x} o=0x{:x} e={} q={} m={} c={} ih={} iw={} r={} s={} stride={} dilation={} "
        "pad_top={} pad_left={} dtype={} acc={}",
        name_of(conv.dataflow), conv.a_address, conv.w_address, conv.o_address, conv.e, conv.q, conv.m,
        conv.c, conv.ih, conv.iw, conv.r, conv.s, conv.stride, conv.dilation, conv.pad_top, conv.pad_left,
        name_of(conv.dtype), conv.accumulate ? 1 : 0);
    write_pitch("a_pitch", conv.a_pitch_bytes);
    write_pitch("w_pitch", conv.w_pitch_bytes);
    write_pitch("o_pitch", conv.o_pitch_bytes);
  }

  void write_operation(const NocSend& send) {
    put("send 0x{:x} rows={} bytes={}", send.source_address, send.rows, send.row_bytes);
    write_pitch("pitch", send.source_pitch_bytes);
    put(" -> ");
    write_core(send.destination_core);
    put(" 0x{:x}", send.destination_address);
    write_pitch("pitch", send.destination_pitch_bytes);
    if (send.accumulate) put(" add={}", name_of(send.accumulate_dtype));
  }

  // A pitch of 0 means packed rows, which the text leaves out.
  void write_pitch(std::string_view key, int64_t pitch_bytes) {
    if (pitch_bytes != 0) put(" {}={}", key, pitch_bytes);
  }

  void write_region(const TensorRegion& region) {
    TESSERA_ASSERT(region.tensor >= 0 && static_cast<size_t>(region.tensor) < program_.tensors.size(),
                   "a region names a declared tensor");
    put("{}[{}:{}, {}:{}]", program_.tensors[static_cast<size_t>(region.tensor)].name, region.row,
        region.row + region.rows, region.col, region.col + region.cols);
  }

  void write_core(int core) {
    TESSERA_ASSERT(core >= 0 && core < program_.mesh.cores(), "a core index lies inside the mesh");
    const Coord coord = core_coord(core, program_.mesh);
    put("{},{}", coord.row, coord.col);
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

  template <typename... Args>
  void put(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out_), format, std::forward<Args>(args)...);
  }

  const Program& program_;
  fmt::memory_buffer out_;
};

}  // namespace

std::string write_program(const Program& program) {
  return ProgramWriter(program).write();
}

std::string format_instruction(const Program& program, const Instruction& instruction) {
  return ProgramWriter(program).instruction_line(instruction);
}

}  // namespace tessera::arch
