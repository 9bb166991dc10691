// The binary form of tile programs (arch/isa/program_binary.hpp): a program built in memory with every
// instruction kind, every kind of tensor and every field away from its default reads back equal; a changed
// field makes programs unequal; a truncated or damaged message is an InternalError, never a crash or a
// program equal to the original. Programs lowered from shipped workloads: tests/e2e/program_binary_test.cpp.
#include "arch/isa/program_binary.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "arch/isa/program_text.hpp"

namespace tessera::arch {
namespace {

// Every field of every value type of a program set away from its default (a field the binary form forgot
// would read back as its default and make the programs differ).
Program every_construct() {
  Program program;
  program.name = "kitchen.sink";
  program.mesh = MeshSpec{2, 3};
  program.op = OpBinding{"gemm", {{"dtype", "bf16"}, {"m", "64"}, {"name", "ffn1"}, {"seed", "7"}}};
  TensorDecl x{"X", DType::bf16, 98, 32, 0x100, TensorRole::input, 7, 3};
  TensorDecl table{"T", DType::fp32, 4, 64, 0x9000, TensorRole::input, 7, 4};
  table.fill = RopeTableFill{8191, 500000.5};
  TensorDecl routes{"R", DType::int32, 2, 3, 0xa000, TensorRole::input, 9, 5};
  routes.fill = ValuesFill{{0, -5, 7, 2147483647, -2147483648LL, 3}};
  TensorDecl out{"O", DType::fp32, 64, 32, 0xb000, TensorRole::output, 0, 0};
  TensorDecl im2col{"A", DType::bf16, 98, 288, 0, TensorRole::view};
  im2col.view = Im2colView{0, 2, 7, 7, 32, 3, 3, 2, 1, 2, 4};
  TensorDecl diagonal{"W", DType::bf16, 288, 16, 0, TensorRole::view};
  diagonal.view = BlockDiagonalView{0, 4, 2, 9, 8, 8};
  TensorDecl gather{"G", DType::fp32, 5, 32, 0, TensorRole::view};
  gather.view = RowGatherView{3, {4, RowGatherView::kZeroRow, 0, 63, 4}};
  program.tensors = {x, table, routes, out, im2col, diagonal, gather};
  program.semaphores = {"a_full[0]", "a_free_e3[1]", "o_done", "psum[1][0]"};

  CoreProgram first{Coord{1, 2}, {}};
  auto add = [&](CoreProgram& core, QueueId queue, Operation operation) {
    Instruction instruction;
    instruction.queue = queue;
    instruction.operation = std::move(operation);
    instruction.waits.push_back(SemaphoreWait{SemaphoreRef{1, kSameCore}, 2});
    instruction.waits.push_back(SemaphoreWait{SemaphoreRef{3, 4}, 1});
    instruction.signals.push_back(SemaphoreRef{0, kSameCore});
    instruction.signals.push_back(SemaphoreRef{2, 5});
    instruction.line = 17;  // does not travel, and does not count
    core.instructions.push_back(std::move(instruction));
  };
  add(first, QueueId{QueueKind::dma, 3}, DmaLoad{TensorRegion{4, 1, 2, 3, 4}, 0x40, 640, {0, 2, 5}});
  add(first, QueueId{QueueKind::dma, 1}, DmaStore{0x80, 256, TensorRegion{3, 5, 6, 7, 8}, true});
  add(first, QueueId{QueueKind::pe, 0},
      PeMatmul{Dataflow::os, DType::int8, 1, 2, 3, 4, 5, 6, 7, 8, 9, true, true});
  PeConv conv;
  conv.dataflow = Dataflow::is;
  conv.dtype = DType::fp16;
  conv.a_address = 11, conv.w_address = 12, conv.o_address = 13;
  conv.a_pitch_bytes = 14, conv.w_pitch_bytes = 15, conv.o_pitch_bytes = 16;
  conv.e = 17, conv.q = 18, conv.m = 19, conv.c = 20, conv.ih = 21, conv.iw = 22;
  conv.r = 3, conv.s = 5, conv.stride = 2, conv.dilation = 3, conv.pad_top = 1, conv.pad_left = 2;
  conv.accumulate = true;
  add(first, QueueId{QueueKind::pe, 0}, conv);
  add(first, QueueId{QueueKind::noc, 0}, NocSend{0x10, 32, 4, 64, 5, 0x20, 128, true, DType::int32});

  CoreProgram second{Coord{0, 1}, {}};
  VecOp vec;
  vec.kind = VectorKind::pool;
  vec.dtype = DType::fp16;
  vec.out_dtype = DType::fp32;
  vec.x_address = 1, vec.y_address = 2, vec.g_address = 3, vec.b_address = 4, vec.o_address = 5;
  vec.x_pitch_bytes = 6, vec.y_pitch_bytes = 7, vec.o_pitch_bytes = 8, vec.rows = 9, vec.cols = 10;
  vec.chain = {VecFn::bias, VecFn::gelu_tanh, VecFn::scale};
  vec.scale = 0.125, vec.causal_shift = -3, vec.eps = 1e-5;
  vec.ih = 11, vec.iw = 12, vec.e = 13, vec.q = 14, vec.r = 3, vec.s = 2, vec.stride = 2;
  vec.pad_top = 1, vec.pad_left = 1, vec.average = true, vec.first = true, vec.by_inverse_sum = true;
  vec.parts = 4;
  add(second, QueueId{QueueKind::vec, 0}, vec);
  VecRope rope;
  rope.dtype = DType::fp32;
  rope.x_address = 21, rope.y_address = 22, rope.o_address = 23;
  rope.x_pitch_bytes = 24, rope.y_pitch_bytes = 25, rope.o_pitch_bytes = 26;
  rope.rows = 27, rope.cols = 256, rope.head_dim = 128, rope.rotary_dim = 64, rope.interleaved = true;
  add(second, QueueId{QueueKind::vec, 0}, rope);
  VecRoute route;
  route.x_address = 31, route.i_address = 32, route.o_address = 33, route.x_pitch_bytes = 34;
  route.o_pitch_bytes = 35, route.rows = 36, route.experts = 256, route.top_k = 8, route.groups = 8;
  route.topk_groups = 4, route.sigmoid = true, route.scaling = 2.5;
  add(second, QueueId{QueueKind::vec, 0}, route);

  program.cores = {first, second, CoreProgram{Coord{1, 0}, {}}};  // a core block without instructions
  program.source_file = "kitchen.tprog";                          // does not travel, and does not count
  return program;
}

TEST(ProgramBinary, ReadsBackEveryConstructExactly) {
  const Program program = every_construct();
  const Program read_back = read_program_binary(write_program_binary(program));
  EXPECT_TRUE(read_back == program);
  // Field by field too, so that a failure says where.
  EXPECT_EQ(read_back.name, program.name);
  EXPECT_EQ(read_back.op, program.op);
  EXPECT_EQ(read_back.tensors, program.tensors);
  EXPECT_EQ(read_back.semaphores, program.semaphores);
  ASSERT_EQ(read_back.cores.size(), program.cores.size());
  for (size_t i = 0; i < program.cores.size(); ++i)
    EXPECT_TRUE(read_back.cores[i] == program.cores[i]) << "core block " << i;
  // What does not travel: where the program was read from.
  EXPECT_EQ(read_back.source_file, "");
  EXPECT_EQ(read_back.cores[0].instructions[0].line, 0);
}

TEST(ProgramBinary, ReadsBackTheEmptyProgram) {
  const Program empty;
  EXPECT_TRUE(read_program_binary(write_program_binary(empty)) == empty);
}

TEST(ProgramBinary, ReadsBackWhatTheTextFormReadsBack) {
  // The text form's semaphores are numbered by appearance; the binary form keeps any numbering.
  Program program = every_construct();
  std::swap(program.semaphores[0], program.semaphores[3]);
  for (CoreProgram& core : program.cores)
    for (Instruction& instruction : core.instructions)
      for (SemaphoreRef& signal : instruction.signals)
        if (signal.id == 0) signal.id = 3;
  EXPECT_TRUE(read_program_binary(write_program_binary(program)) == program);
}

// A test that can fail: one field changed anywhere makes the programs differ, and the binary form carries
// the change.
TEST(ProgramBinary, OneChangedFieldMakesProgramsDiffer) {
  const Program original = every_construct();
  std::vector<Program> changed(6, original);
  operation_as<VecOp>(changed[0].cores[1].instructions[0].operation).eps = 2e-5;
  changed[1].tensors[6].view_if<RowGatherView>()->rows[1] = 5;
  changed[2].tensors[1].fill_if<RopeTableFill>()->base = 10000;
  changed[3].cores[0].instructions[2].waits[1].count = 3;
  std::get<DmaLoad>(changed[4].cores[0].instructions[0].operation).destinations.pop_back();
  changed[5].op->attributes["m"] = "65";
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_FALSE(changed[i] == original) << "change " << i;
    const Program read_back = read_program_binary(write_program_binary(changed[i]));
    EXPECT_TRUE(read_back == changed[i]) << "change " << i;
    EXPECT_FALSE(read_back == original) << "change " << i;
  }
}

TEST(ProgramBinary, ATruncatedMessageIsAnInternalErrorAtEveryLength) {
  const std::string bytes = write_program_binary(every_construct());
  for (size_t length = 0; length < bytes.size(); ++length)
    EXPECT_THROW(read_program_binary(std::string_view(bytes).substr(0, length)), InternalError)
        << "the first " << length << " of " << bytes.size() << " bytes";
  EXPECT_THROW(read_program_binary(bytes + '\0'), InternalError);  // bytes past its end
}

// Every byte of the message means something: with any one byte changed, the message either is refused (a
// count past the bytes left, an enum, flag or instruction kind out of range, the magic) or reads back as a
// different program — never a crash, never a silent read of the original.
TEST(ProgramBinary, ADamagedByteIsRefusedOrChangesTheProgram) {
  const Program program = every_construct();
  const std::string bytes = write_program_binary(program);
  int refused = 0;
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(static_cast<unsigned char>(damaged[at]) ^ flip);
      try {
        EXPECT_FALSE(read_program_binary(damaged) == program) << "byte " << at << " ^ " << int{flip};
      } catch (const InternalError&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(ProgramBinary, AHugeCountIsRefusedBeforeAnythingIsAllocated) {
  std::string bytes = write_program_binary(Program{});
  // The name's length is the first field after the 8 magic bytes: claim 2^62 bytes of name.
  const uint64_t huge = uint64_t{1} << 62;
  bytes.replace(8, sizeof huge, reinterpret_cast<const char*>(&huge), sizeof huge);
  EXPECT_THROW(read_program_binary(bytes), InternalError);
}

TEST(ProgramBinary, ATextIsNotABinaryProgram) {
  EXPECT_THROW(read_program_binary(write_program(Program{"p", MeshSpec{1, 1}, {}, {}, {}, {}, ""})),
               InternalError);
}

}  // namespace
}  // namespace tessera::arch
