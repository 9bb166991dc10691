// The tile program: the instruction set the mapper emits and the simulator runs (DESIGN.md: mapper and sim
// meet only here). Per core, instructions go to in-order unit queues (DMA engines, the PE array, the NoC
// engine) and synchronise through counting semaphores; SRAM addresses, DMA descriptors and buffers are
// explicit. docs/tile-program.md describes the text form that program_text.cpp reads and writes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "arch/spec.hpp"
#include "arch/topology.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"

namespace tessera::arch {

enum class QueueKind : uint8_t { dma, pe, noc };

struct QueueId {
  QueueKind kind = QueueKind::pe;
  int index = 0;  // DMA engine number; 0 for pe and noc
  bool operator==(const QueueId& other) const { return kind == other.kind && index == other.index; }
};
std::string name_of(const QueueId& queue);  // "dma0", "pe", "noc"

// A semaphore of one core. core == kSameCore means the issuing core, or, on a multicast load, every
// destination core.
constexpr int kSameCore = -1;
struct SemaphoreRef {
  int id = 0;  // index into Program::semaphores
  int core = kSameCore;
  bool operator==(const SemaphoreRef& other) const { return id == other.id && core == other.core; }
};

struct SemaphoreWait {
  SemaphoreRef semaphore;
  int count = 1;  // consumes this many signals
  bool operator==(const SemaphoreWait& other) const {
    return semaphore == other.semaphore && count == other.count;
  }
};

// A rectangle of a 2-D row-major tensor, in elements: rows [row, row + rows), columns [col, col + cols).
struct TensorRegion {
  int tensor = 0;  // index into Program::tensors
  int64_t row = 0;
  int64_t rows = 0;
  int64_t col = 0;
  int64_t cols = 0;
  bool operator==(const TensorRegion& other) const {
    return tensor == other.tensor && row == other.row && rows == other.rows && col == other.col &&
           cols == other.cols;
  }
};

// DRAM -> SRAM, a 2-D strided copy. With destinations, one read from DRAM is multicast over the NoC to the
// same SRAM address of every listed core (the issuing core included only if listed).
struct DmaLoad {
  TensorRegion source;
  uint64_t sram_address = 0;
  int64_t sram_pitch_bytes = 0;   // bytes between rows in SRAM; 0 = rows packed (cols * element size)
  std::vector<int> destinations;  // core indices; empty = the issuing core only
  bool operator==(const DmaLoad& other) const {
    return source == other.source && sram_address == other.sram_address &&
           sram_pitch_bytes == other.sram_pitch_bytes && destinations == other.destinations;
  }
};

// SRAM -> DRAM. With accumulate, the DRAM contents are read, added to, and written back (partial sums).
struct DmaStore {
  uint64_t sram_address = 0;
  int64_t sram_pitch_bytes = 0;
  TensorRegion destination;
  bool accumulate = false;
  bool operator==(const DmaStore& other) const {
    return sram_address == other.sram_address && sram_pitch_bytes == other.sram_pitch_bytes &&
           destination == other.destination && accumulate == other.accumulate;
  }
};

// O[m x n] (+)= A[m x k] * W[k x n] on the PE array. Operands are `dtype`, O is accumulator_of(dtype).
struct PeMatmul {
  Dataflow dataflow = Dataflow::ws;
  DType dtype = DType::bf16;
  uint64_t a_address = 0, w_address = 0, o_address = 0;
  int64_t a_pitch_bytes = 0, w_pitch_bytes = 0, o_pitch_bytes = 0;  // 0 = packed rows
  int64_t m = 0, n = 0, k = 0;
  bool accumulate = false;
  bool operator==(const PeMatmul& other) const {
    return dataflow == other.dataflow && dtype == other.dtype && a_address == other.a_address &&
           w_address == other.w_address && o_address == other.o_address &&
           a_pitch_bytes == other.a_pitch_bytes && w_pitch_bytes == other.w_pitch_bytes &&
           o_pitch_bytes == other.o_pitch_bytes && m == other.m && n == other.n && k == other.k &&
           accumulate == other.accumulate;
  }
};

// A direct convolution tile on the PE array (docs/tile-program.md, "conv"): the input tile holds `ih` rows of
// `iw` pixels of `c` channels (one pixel per SRAM row), the filter tile r*s*c rows of `m` filters in (filter
// row, filter column, channel) order, the output tile e*q pixels of `m` accumulators:
//   O[y][x][f] (+)= sum over fr, fs, ch of I[y*stride + fr*dilation - pad_top][x*stride + fs*dilation -
//   pad_left][ch] * W[(fr*s + fs)*c + ch][f],
// where I is zero outside the tile's rows and columns (the padding, which occupies no SRAM). WS, OS and IS
// run it as r*s matrix products on shifted windows of the input tile (the array's operand address generator
// walks them); RS runs it as Eyeriss does (docs/pe-array-timing.md, "RS").
struct PeConv {
  Dataflow dataflow = Dataflow::rs;
  DType dtype = DType::bf16;
  uint64_t a_address = 0, w_address = 0, o_address = 0;
  int64_t a_pitch_bytes = 0, w_pitch_bytes = 0, o_pitch_bytes = 0;  // 0 = packed rows
  int64_t e = 0, q = 0;                                             // output rows and columns
  int64_t m = 0, c = 0;                                             // filters, channels
  int64_t ih = 0, iw = 0;                                           // input tile rows and columns in SRAM
  int64_t r = 1, s = 1, stride = 1, dilation = 1, pad_top = 0, pad_left = 0;
  bool accumulate = false;

  int64_t macs() const { return e * q * m * c * r * s; }
  bool operator==(const PeConv& other) const {
    return dataflow == other.dataflow && dtype == other.dtype && a_address == other.a_address &&
           w_address == other.w_address && o_address == other.o_address &&
           a_pitch_bytes == other.a_pitch_bytes && w_pitch_bytes == other.w_pitch_bytes &&
           o_pitch_bytes == other.o_pitch_bytes && e == other.e && q == other.q && m == other.m &&
           c == other.c && ih == other.ih && iw == other.iw && r == other.r && s == other.s &&
           stride == other.stride && dilation == other.dilation && pad_top == other.pad_top &&
           pad_left == other.pad_left && accumulate == other.accumulate;
  }
};

// SRAM of this core -> SRAM of another core over the NoC, 2-D. With accumulate, the destination adds the
// incoming `accumulate_dtype` elements to what it holds (reduction of partial sums).
struct NocSend {
  uint64_t source_address = 0;
  int64_t source_pitch_bytes = 0;  // 0 = packed
  int64_t rows = 0;
  int64_t row_bytes = 0;
  int destination_core = 0;
  uint64_t destination_address = 0;
  int64_t destination_pitch_bytes = 0;  // 0 = packed
  bool accumulate = false;
  DType accumulate_dtype = DType::fp32;
  bool operator==(const NocSend& other) const {
    return source_address == other.source_address && source_pitch_bytes == other.source_pitch_bytes &&
           rows == other.rows && row_bytes == other.row_bytes && destination_core == other.destination_core &&
           destination_address == other.destination_address &&
           destination_pitch_bytes == other.destination_pitch_bytes && accumulate == other.accumulate &&
           (!accumulate || accumulate_dtype == other.accumulate_dtype);
  }
};

using Operation = std::variant<DmaLoad, DmaStore, PeMatmul, PeConv, NocSend>;

struct Instruction {
  QueueId queue;
  Operation operation;
  std::vector<SemaphoreWait> waits;   // all satisfied (in order) before the instruction starts
  std::vector<SemaphoreRef> signals;  // posted when it completes
  int line = 0;                       // line in the program text, 0 if built in memory

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

// The im2col view of an NHWC input tensor (docs/tile-program.md, "Views"): a virtual matrix with a row per
// output pixel (image, p, q) and a column per (group, filter row, filter column, channel of the group), the
// GEMM operand A of a convolution. It occupies no DRAM: a DMA load of a view region gathers the elements from
// the source tensor, row by row in contiguous runs, and writes zeros where a tap falls in the padding.
struct Im2colView {
  int source = 0;  // index into Program::tensors: an input tensor [n*h*w, c]
  int64_t n = 1, h = 0, w = 0, c = 0, r = 0, s = 0;
  int64_t stride = 1, pad = 0, dilation = 1, groups = 1;

  int64_t p() const { return (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1; }
  int64_t q() const { return (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1; }
  int64_t group_c() const { return c / groups; }
  int64_t taps() const { return r * s * group_c(); }  // columns per group
  int64_t rows() const { return n * p() * q(); }
  int64_t cols() const { return groups * taps(); }
  bool operator==(const Im2colView& other) const {
    return source == other.source && n == other.n && h == other.h && w == other.w && c == other.c &&
           r == other.r && s == other.s && stride == other.stride && pad == other.pad &&
           dilation == other.dilation && groups == other.groups;
  }
};

// Calls run(offset, source_element, count) for the pieces of view row `row`, columns [col, col + cols):
// `count` elements that land at element `offset` of the row piece and come from consecutive elements of the
// source tensor starting at `source_element`, or are padding zeros when source_element < 0. Adjacent pieces
// that are contiguous in the source are merged (with one group and no dilation, a filter row's taps over all
// channels are one run).
template <class Run>
void for_each_im2col_run(const Im2colView& view, int64_t row, int64_t col, int64_t cols, Run&& run) {
  const int64_t pq = view.p() * view.q();
  const int64_t image = row / pq, op = (row % pq) / view.q(), oq = row % view.q();
  const int64_t group_c = view.group_c(), taps = view.taps();
  int64_t pending_offset = 0, pending_source = 0, pending_count = 0;
  for (int64_t offset = 0; offset < cols;) {
    const int64_t column = col + offset;
    const int64_t group = column / taps, tap = column % taps;
    const int64_t fr = tap / (view.s * group_c), fs = (tap / group_c) % view.s, channel = tap % group_c;
    const int64_t count = std::min(group_c - channel, cols - offset);
    const int64_t ih = op * view.stride - view.pad + fr * view.dilation;
    const int64_t iw = oq * view.stride - view.pad + fs * view.dilation;
    const int64_t source = ih < 0 || ih >= view.h || iw < 0 || iw >= view.w
                               ? -1
                               : ((image * view.h + ih) * view.w + iw) * view.c + group * group_c + channel;
    const bool joins = pending_count > 0 && ((source < 0 && pending_source < 0) ||
                                             (source >= 0 && source == pending_source + pending_count));
    if (joins) {
      pending_count += count;
    } else {
      if (pending_count > 0) run(pending_offset, pending_source, pending_count);
      pending_offset = offset, pending_source = source, pending_count = count;
    }
    offset += count;
  }
  if (pending_count > 0) run(pending_offset, pending_source, pending_count);
}

// The weights of `packed` groups of a grouped convolution side by side as one block-diagonal GEMM operand
// (docs/tile-program.md, "Views"), so that one PE instruction computes several groups: a virtual
// [groups*window*group_c, packed*group_k] matrix over the weights W [groups*window*group_c, group_k] (rows in
// (group, filter position, channel) order; window = r*s). Super-group `sg` (packed groups) takes view rows
// [sg*window*packed*group_c, ...) in (filter position, group j of the pack, channel) order, matching an
// im2col view with groups/packed groups; the row of pack member j holds its filters at columns [j*group_k,
// (j+1)*group_k) and zeros elsewhere. Zeros cost no DRAM traffic.
struct BlockDiagonalView {
  int source = 0;  // index into Program::tensors: the input W
  int64_t groups = 1, packed = 1, window = 1, group_c = 1, group_k = 1;

  int64_t rows() const { return groups * window * group_c; }
  int64_t cols() const { return packed * group_k; }
  bool operator==(const BlockDiagonalView& other) const {
    return source == other.source && groups == other.groups && packed == other.packed &&
           window == other.window && group_c == other.group_c && group_k == other.group_k;
  }
};

// The one run of view row `row` inside columns [col, col + cols) that holds weights: run(offset, source
// element, count) as for_each_im2col_run; nothing when the row's block lies outside the columns.
template <class Run>
void for_each_block_diagonal_run(const BlockDiagonalView& view, int64_t row, int64_t col, int64_t cols,
                                 Run&& run) {
  const int64_t per_super = view.window * view.packed * view.group_c;
  const int64_t super = row / per_super, within = row % per_super;
  const int64_t position = within / (view.packed * view.group_c);
  const int64_t member = (within % (view.packed * view.group_c)) / view.group_c,
                channel = within % view.group_c;
  const int64_t source_row =
      ((super * view.packed + member) * view.window + position) * view.group_c + channel;
  const int64_t first = std::max(col, member * view.group_k),
                last = std::min(col + cols, (member + 1) * view.group_k);
  if (first < last)
    run(first - col, source_row * view.group_k + (first - member * view.group_k), last - first);
}

// A tensor in DRAM: inputs are filled by the counter-based generator (seed, generator id), outputs start
// zero. A view has no storage of its own (its rows and cols are the view's).
struct TensorDecl {
  std::string name;
  DType dtype = DType::fp32;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t dram_address = 0;
  TensorRole role = TensorRole::input;
  uint64_t seed = 0;
  uint32_t generator_id = 0;
  std::optional<Im2colView> im2col;                 // role == view: one of the two
  std::optional<BlockDiagonalView> block_diagonal;  //
  int view_source() const { return im2col ? im2col->source : block_diagonal->source; }

  // DRAM bytes the tensor occupies (0 for a view).
  int64_t size_in_bytes() const { return role == TensorRole::view ? 0 : rows * cols * size_bytes(dtype); }
  bool operator==(const TensorDecl& other) const {
    return name == other.name && dtype == other.dtype && rows == other.rows && cols == other.cols &&
           dram_address == other.dram_address && role == other.role && seed == other.seed &&
           generator_id == other.generator_id && im2col == other.im2col &&
           block_diagonal == other.block_diagonal;
  }
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

  int semaphore_id(const std::string& name);     // finds or adds
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
};

// Where an instruction is, for error messages: "core 0,1 pe #3" plus the program file and line.
std::string describe_instruction(const Program& program, const CoreProgram& core,
                                 const Instruction& instruction, int64_t position);
SourceLocation location_of(const Program& program, const Instruction& instruction);

// Checks a program against a machine before it runs: coordinates, queues, address ranges, tensor regions,
// dataflow/dtype support, and that no semaphore is waited on more often than it is signalled anywhere.
// Throws InputError naming the instruction.
void check_program(const Program& program, const ArchSpec& spec);

// The text form (docs/tile-program.md). read_program throws InputError with file:line:column.
Program read_program(const std::string& text, const std::string& file_name);
Program read_program_file(const std::string& path);
std::string write_program(const Program& program);
// One instruction as its program line reads, without indentation (for trace labels and messages).
std::string format_instruction(const Program& program, const Instruction& instruction);

}  // namespace tessera::arch
