#include <fmt/format.h>

#include <map>

#include "arch/conv_timing.hpp"
#include "arch/program.hpp"

namespace tessera::arch {

namespace {

int64_t packed_or(int64_t pitch, int64_t row_bytes) {
  return pitch != 0 ? pitch : row_bytes;
}

class Checker {
 public:
  Checker(const Program& program, const ArchSpec& spec) : program_(program), spec_(spec) {}

  void run() {
    check_header();
    for (const CoreProgram& core : program_.cores) check_core(core);
    check_semaphore_balance();
  }

 private:
  [[noreturn]] void fail(const CoreProgram& core, const Instruction& instruction, int64_t position,
                         const std::string& message, const std::string& hint = "") const {
    throw InputError(location_of(program_, instruction),
                     describe_instruction(program_, core, instruction, position), message, hint);
  }

  [[noreturn]] void fail_header(const std::string& field, const std::string& message,
                                const std::string& hint) const {
    throw InputError(SourceLocation{program_.source_file.empty() ? "(program)" : program_.source_file, 0, 0},
                     field, message, hint);
  }

  void check_header() const {
    if (program_.mesh.rows != spec_.mesh.rows || program_.mesh.cols != spec_.mesh.cols) {
      fail_header("mesh",
                  fmt::format("the program is for a {}x{} mesh but machine '{}' is {}x{}", program_.mesh.rows,
                              program_.mesh.cols, spec_.name, spec_.mesh.rows, spec_.mesh.cols),
                  "map the workload for this machine (tessera map --arch ...)");
    }
    for (size_t i = 0; i < program_.tensors.size(); ++i) {
      const TensorDecl& tensor = program_.tensors[i];
      if (tensor.rows <= 0 || tensor.cols <= 0)
        fail_header("tensor " + tensor.name, "a tensor needs at least one row and one column", "");
      if (tensor.role == TensorRole::view) check_view(tensor);
      if (tensor.role == TensorRole::input && is_integer(tensor.dtype) && tensor.dtype != DType::int8)
        fail_header("tensor " + tensor.name, "input tensors are fp32, bf16, fp16 or int8",
                    "int32 is an accumulator type");
      for (size_t j = 0; j < i; ++j) {
        const TensorDecl& other = program_.tensors[j];
        const uint64_t end = tensor.dram_address + static_cast<uint64_t>(tensor.size_in_bytes());
        const uint64_t other_end = other.dram_address + static_cast<uint64_t>(other.size_in_bytes());
        if (tensor.dram_address < other_end && other.dram_address < end) {
          fail_header("tensor " + tensor.name, fmt::format("its DRAM range overlaps tensor {}", other.name),
                      "give each tensor its own address range");
        }
      }
    }
  }

  // The reader checks a view as it reads it; programs built in memory get the same checks here.
  void check_view(const TensorDecl& tensor) const {
    const std::string field = "tensor " + tensor.name;
    if (tensor.block_diagonal) {
      const BlockDiagonalView& view = *tensor.block_diagonal;
      const bool source_ok = view.source >= 0 && view.source < static_cast<int>(program_.tensors.size()) &&
                             program_.tensors[view.source].role == TensorRole::input;
      if (!source_ok || view.packed <= 0 || view.groups % view.packed != 0 ||
          program_.tensors[view.source].rows != view.rows() ||
          program_.tensors[view.source].cols != view.group_k || tensor.rows != view.rows() ||
          tensor.cols != view.cols() || program_.tensors[view.source].dtype != tensor.dtype)
        fail_header(field, "the block-diagonal view does not fit its source", "");
      return;
    }
    if (!tensor.im2col) fail_header(field, "a view tensor without its view", "");
    const Im2colView& view = *tensor.im2col;
    if (view.source < 0 || view.source >= static_cast<int>(program_.tensors.size()) ||
        program_.tensors[view.source].role != TensorRole::input)
      fail_header(field, "the view's source is not an input tensor", "");
    const TensorDecl& source = program_.tensors[view.source];
    if (source.dtype != tensor.dtype || source.rows != view.n * view.h * view.w || source.cols != view.c ||
        view.groups <= 0 || view.c % view.groups != 0 || view.p() <= 0 || view.q() <= 0 ||
        tensor.rows != view.rows() || tensor.cols != view.cols())
      fail_header(field, fmt::format("the im2col view does not fit its source {}", source.name), "");
  }

  void check_sram_range(const CoreProgram& core, const Instruction& instruction, int64_t position,
                        const char* what, uint64_t address, int64_t rows, int64_t row_bytes,
                        int64_t pitch) const {
    if (pitch != 0 && pitch < row_bytes) {
      fail(core, instruction, position,
           fmt::format("{}: row pitch {} B is shorter than a row ({} B)", what, pitch, row_bytes),
           "rows would overlap; use a pitch of at least the row size, or omit it for packed rows");
    }
    const uint64_t end =
        address + static_cast<uint64_t>((rows - 1) * packed_or(pitch, row_bytes) + row_bytes);
    if (end > static_cast<uint64_t>(spec_.core.sram.bytes)) {
      fail(core, instruction, position,
           fmt::format("{}: SRAM bytes 0x{:x}..0x{:x} run past the end of the {} KiB SRAM (0x{:x})", what,
                       address, end, spec_.core.sram.kib, spec_.core.sram.bytes),
           "addresses are per core and start at 0");
    }
  }

  void check_region(const CoreProgram& core, const Instruction& instruction, int64_t position,
                    const TensorRegion& region) const {
    if (region.tensor < 0 || region.tensor >= static_cast<int>(program_.tensors.size()))
      fail(core, instruction, position, "names no declared tensor");
    const TensorDecl& tensor = program_.tensors[region.tensor];
    if (region.rows <= 0 || region.cols <= 0 || region.row < 0 || region.col < 0 ||
        region.row + region.rows > tensor.rows || region.col + region.cols > tensor.cols) {
      fail(core, instruction, position,
           fmt::format("region {}[{}:{}, {}:{}] is not inside the {}x{} tensor", tensor.name, region.row,
                       region.row + region.rows, region.col, region.col + region.cols, tensor.rows,
                       tensor.cols));
    }
  }

  void check_core_index(const CoreProgram& core, const Instruction& instruction, int64_t position, int index,
                        const char* what) const {
    if (index < 0 || index >= spec_.mesh.cores()) {
      fail(core, instruction, position,
           fmt::format("{} names core #{}, outside the {}x{} mesh", what, index, spec_.mesh.rows,
                       spec_.mesh.cols));
    }
  }

  void check_core(const CoreProgram& core) {
    if (core.coord.row < 0 || core.coord.row >= spec_.mesh.rows || core.coord.col < 0 ||
        core.coord.col >= spec_.mesh.cols) {
      fail_header(fmt::format("core {},{}", core.coord.row, core.coord.col),
                  fmt::format("no such core in the {}x{} mesh", spec_.mesh.rows, spec_.mesh.cols), "");
    }
    std::map<std::string, int64_t> positions;
    for (const Instruction& instruction : core.instructions) {
      const int64_t position = positions[name_of(instruction.queue)]++;
      check_instruction(core, instruction, position);
      for (const SemaphoreWait& wait : instruction.waits) {
        if (wait.count <= 0) fail(core, instruction, position, "a wait consumes at least one signal");
        if (wait.semaphore.core != kSameCore)
          check_core_index(core, instruction, position, wait.semaphore.core, "a wait");
      }
      for (const SemaphoreRef& signal : instruction.signals)
        if (signal.core != kSameCore) check_core_index(core, instruction, position, signal.core, "a signal");
    }
  }

  void check_conv(const CoreProgram& core, const Instruction& instruction, int64_t position,
                  const PeConv& conv) const {
    if (!spec_.core.pe_array.supports(conv.dataflow)) {
      fail(core, instruction, position,
           fmt::format("dataflow {} is not supported by machine '{}'", name_of(conv.dataflow), spec_.name),
           "core.pe_array.dataflows lists what the array supports");
    }
    if (!spec_.core.pe_array.supports(conv.dtype) || conv.dtype == DType::int32) {
      fail(core, instruction, position,
           fmt::format("operand type {} is not supported by machine '{}'", tessera::name_of(conv.dtype),
                       spec_.name),
           "core.pe_array.dtypes lists what the array supports");
    }
    if (conv.dataflow == Dataflow::rs) {
      const std::string why = rs_infeasibility(spec_, conv.dtype, conv.s);
      if (!why.empty())
        fail(core, instruction, position, why, "give the PEs larger scratchpads (core.pe_spad_bytes)");
    }
    const int64_t element = size_bytes(conv.dtype);
    const int64_t accumulator = size_bytes(accumulator_of(conv.dtype));
    check_sram_range(core, instruction, position, "input tile a", conv.a_address, conv.ih * conv.iw,
                     conv.c * element, conv.a_pitch_bytes);
    check_sram_range(core, instruction, position, "filter tile w", conv.w_address, conv.r * conv.s * conv.c,
                     conv.m * element, conv.w_pitch_bytes);
    check_sram_range(core, instruction, position, "output tile o", conv.o_address, conv.e * conv.q,
                     conv.m * accumulator, conv.o_pitch_bytes);
  }

  void check_instruction(const CoreProgram& core, const Instruction& instruction, int64_t position) const {
    const QueueId& queue = instruction.queue;
    if (queue.kind == QueueKind::dma && (queue.index < 0 || queue.index >= spec_.core.dma.engines)) {
      fail(core, instruction, position,
           fmt::format("queue dma{} does not exist: machine '{}' has {} DMA engine{} per core", queue.index,
                       spec_.name, spec_.core.dma.engines, spec_.core.dma.engines == 1 ? "" : "s"),
           "use dma0..dma" + std::to_string(spec_.core.dma.engines - 1));
    }
    const bool matches = std::visit(
        [&](const auto& op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, PeMatmul> || std::is_same_v<T, PeConv>)
            return queue.kind == QueueKind::pe;
          if constexpr (std::is_same_v<T, NocSend>) return queue.kind == QueueKind::noc;
          return queue.kind == QueueKind::dma;
        },
        instruction.operation);
    if (!matches) fail(core, instruction, position, "this operation does not run on queue " + name_of(queue));

    if (const auto* load = std::get_if<DmaLoad>(&instruction.operation)) {
      check_region(core, instruction, position, load->source);
      const int64_t row_bytes = load->source.cols * size_bytes(program_.tensors[load->source.tensor].dtype);
      check_sram_range(core, instruction, position, "destination", load->sram_address, load->source.rows,
                       row_bytes, load->sram_pitch_bytes);
      for (size_t i = 0; i < load->destinations.size(); ++i) {
        check_core_index(core, instruction, position, load->destinations[i], "the multicast");
        for (size_t j = 0; j < i; ++j)
          if (load->destinations[j] == load->destinations[i])
            fail(core, instruction, position, "a core is listed twice in the multicast");
      }
      if (load->destinations.size() > 1 && !spec_.noc.multicast) {
        fail(core, instruction, position,
             fmt::format("multicast to {} cores, but machine '{}' has noc.multicast: false",
                         load->destinations.size(), spec_.name),
             "load each core's copy separately, or enable multicast");
      }
    } else if (const auto* store = std::get_if<DmaStore>(&instruction.operation)) {
      check_region(core, instruction, position, store->destination);
      if (program_.tensors[store->destination.tensor].role != TensorRole::output) {
        fail(core, instruction, position,
             fmt::format("stores into tensor {}, which is not an output",
                         program_.tensors[store->destination.tensor].name),
             "inputs and views are read-only; store into an output tensor");
      }
      const DType dtype = program_.tensors[store->destination.tensor].dtype;
      check_sram_range(core, instruction, position, "source", store->sram_address, store->destination.rows,
                       store->destination.cols * size_bytes(dtype), store->sram_pitch_bytes);
      if (store->accumulate && dtype != DType::fp32 && dtype != DType::int32) {
        fail(core, instruction, position,
             fmt::format("an accumulating store adds fp32 or int32 partial sums; tensor {} is {}",
                         program_.tensors[store->destination.tensor].name, name_of(dtype)));
      }
    } else if (const auto* matmul = std::get_if<PeMatmul>(&instruction.operation)) {
      if (!spec_.core.pe_array.supports(matmul->dataflow)) {
        fail(core, instruction, position,
             fmt::format("dataflow {} is not supported by machine '{}'", name_of(matmul->dataflow),
                         spec_.name),
             "core.pe_array.dataflows lists what the array supports");
      }
      if (!spec_.core.pe_array.supports(matmul->dtype) || matmul->dtype == DType::int32) {
        fail(core, instruction, position,
             fmt::format("operand type {} is not supported by machine '{}'", tessera::name_of(matmul->dtype),
                         spec_.name),
             "core.pe_array.dtypes lists what the array supports");
      }
      if (matmul->dataflow == Dataflow::rs) {
        fail(core, instruction, position, "row stationary runs convolutions: a matmul takes ws, os or is",
             "write the convolution as 'conv rs ...', or pick another dataflow for the matmul");
      }
      if (matmul->m <= 0 || matmul->n <= 0 || matmul->k <= 0)
        fail(core, instruction, position, "m, n and k must be positive");
      const int64_t element = size_bytes(matmul->dtype);
      const int64_t accumulator = size_bytes(accumulator_of(matmul->dtype));
      check_sram_range(core, instruction, position, "operand a", matmul->a_address, matmul->m,
                       matmul->k * element, matmul->a_pitch_bytes);
      check_sram_range(core, instruction, position, "operand w", matmul->w_address, matmul->k,
                       matmul->n * element, matmul->w_pitch_bytes);
      check_sram_range(core, instruction, position, "result o", matmul->o_address, matmul->m,
                       matmul->n * accumulator, matmul->o_pitch_bytes);
    } else if (const auto* conv = std::get_if<PeConv>(&instruction.operation)) {
      check_conv(core, instruction, position, *conv);
    } else if (const auto* send = std::get_if<NocSend>(&instruction.operation)) {
      if (send->rows <= 0 || send->row_bytes <= 0)
        fail(core, instruction, position, "rows and bytes must be positive");
      check_core_index(core, instruction, position, send->destination_core, "the send");
      check_sram_range(core, instruction, position, "source", send->source_address, send->rows,
                       send->row_bytes, send->source_pitch_bytes);
      check_sram_range(core, instruction, position, "destination", send->destination_address, send->rows,
                       send->row_bytes, send->destination_pitch_bytes);
      if (send->accumulate) {
        if (send->accumulate_dtype != DType::fp32 && send->accumulate_dtype != DType::int32)
          fail(core, instruction, position, "a reducing send adds fp32 or int32 partial sums");
        if (send->row_bytes % size_bytes(send->accumulate_dtype) != 0)
          fail(core, instruction, position, "a reducing send moves whole elements per row");
      }
    }
  }

  // Statically, a semaphore waited on more often than it is signalled anywhere can never be satisfied.
  void check_semaphore_balance() const {
    std::map<std::pair<int, int>, int64_t>
        signals;  // (core, semaphore) -> signals posted in the whole program
    for (const CoreProgram& core : program_.cores) {
      const int issuer = core_index(core.coord, spec_.mesh);
      for (const Instruction& instruction : core.instructions) {
        const auto* load = std::get_if<DmaLoad>(&instruction.operation);
        for (const SemaphoreRef& ref : instruction.signals) {
          if (ref.core == kSameCore && load && !load->destinations.empty()) {
            for (int destination : load->destinations) ++signals[{destination, ref.id}];
          } else {
            ++signals[{ref.core == kSameCore ? issuer : ref.core, ref.id}];
          }
        }
      }
    }
    std::map<std::pair<int, int>, int64_t> waited;
    for (const CoreProgram& core : program_.cores) {
      const int issuer = core_index(core.coord, spec_.mesh);
      std::map<std::string, int64_t> positions;
      for (const Instruction& instruction : core.instructions) {
        const int64_t position = positions[name_of(instruction.queue)]++;
        for (const SemaphoreWait& wait : instruction.waits) {
          const std::pair<int, int> key{wait.semaphore.core == kSameCore ? issuer : wait.semaphore.core,
                                        wait.semaphore.id};
          waited[key] += wait.count;
          const int64_t available = signals.count(key) ? signals.at(key) : 0;
          if (waited[key] > available) {
            const Coord owner = core_coord(key.first, spec_.mesh);
            fail(core, instruction, position,
                 fmt::format(
                     "waits for {} of core {},{}, which the whole program signals {} time{} — this wait "
                     "needs signal number {}, so it can never proceed",
                     program_.semaphores[key.second], owner.row, owner.col, available,
                     available == 1 ? "" : "s", waited[key]),
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
