// The text form of tile programs (docs/tile-program.md): what the reader makes of each construct, that the
// writer's canonical text survives a round trip in both directions, and what a user sees for each mistake
// (the message text is part of the interface, so the important ones are pinned in full).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/isa/program_text.hpp"

namespace tessera::arch {
namespace {

// Every construct of the format in canonical form: both kinds of DMA operation with and without pitch,
// multicast and accumulation, two dataflows with every pitch, sends with and without pitches and add=,
// index suffixes, remote semaphores, wait counts, and a core block without instructions.
const std::string kCanonical =
    "tessera-program 1\n"
    "name bert-ffn.ffn1.ws\n"
    "mesh 2x3\n"
    "op gemm dtype=bf16 index=0 k=128 m=128 n=64 name=ffn1 seed=7\n"
    "tensor A bf16 128x128 at 0x0 input seed=7 id=0\n"
    "tensor W bf16 128x64 at 0x8000 input seed=7 id=1\n"
    "tensor O fp32 128x64 at 0xc000 output\n"
    "\n"
    "core 0,0\n"
    "  dma0 load A[0:64, 0:128] -> 0x0 to 0,0 1,2 ; signal a_full[0]\n"
    "  dma1 load W[0:128, 0:64] -> 0x4000 pitch=256 ; wait w_free*2 ; signal w_full\n"
    "  pe ws a=0x0 w=0x4000 o=0x8000 m=64 n=64 k=128 dtype=bf16 acc=0 w_pitch=256 ; wait a_full[0] w_full ; "
    "signal o_full psum[1][0]@1,2\n"
    "  noc send 0x8000 rows=64 bytes=256 -> 0,1 0x8000 add=fp32 ; wait o_full ; signal o_sent@0,1\n"
    "  dma0 store 0x8000 -> O[0:64, 0:64] add ; wait o_sent@0,1*3\n"
    "\n"
    "core 1,2\n"
    "  pe os a=0x0 w=0x100 o=0x200 m=1 n=2 k=3 dtype=int8 acc=1 a_pitch=16 w_pitch=32 o_pitch=64 ; wait "
    "psum[1][0]\n"
    "  noc send 0x200 rows=1 bytes=8 pitch=16 -> 0,0 0x300 pitch=32\n"
    "  dma2 store 0x200 pitch=64 -> O[64:65, 0:2]\n"
    "\n"
    "core 0,1\n";

// kCanonical as a person might write it: comments, blank lines, extra and missing blanks, tabs, CRLF line
// ends, options in another order, decimal addresses, explicit defaults (pitch=0, *1) and a leading zero
// in a semaphore index.
const std::string kHandWritten =
    "# FFN1 of BERT, weight-stationary\n"
    "\n"
    "tessera-program 1   # format version\n"
    "name   bert-ffn.ffn1.ws\r\n"
    "mesh 2x3\n"
    "op gemm  seed=7 name=ffn1 n=64 m=128 k=128 index=0 dtype=bf16\n"
    "tensor A bf16 128x128 at 0 input id=0 seed=7\n"
    "tensor W\tbf16 128x64 at 32768 input seed=0x7 id=1\n"
    "tensor O fp32 128x64 at 49152 output\n"
    "core 0,0\n"
    "dma0 load A[ 0:64 ,0:128 ] -> 0 to 0,0 1, 2;signal a_full[00]\n"
    "\tdma1   load W[0:128,0:64]->16384 pitch=256 ; wait w_free*2 ; signal w_full   # weights\r\n"
    "  pe ws k=128 n=64 m=64 o=32768 w=0x4000 a=0x0 acc=0 dtype=bf16 w_pitch=0x100 ; wait a_full[0] w_full ; "
    "signal o_full psum[1][0]@1,2\n"
    "  noc send 0x8000 bytes=256 rows=64 pitch=0 -> 0,1 0x8000 add=fp32 ; wait o_full*1 ; signal o_sent@0,1\n"
    "  dma0 store 32768 -> O[0:64, 0:64] add ; wait o_sent @ 0,1 * 3\n"
    "core 1,2\n"
    "  pe os a=0x0 w=0x100 o=0x200 m=1 n=2 k=3 dtype=int8 acc=1 o_pitch=64 w_pitch=32 a_pitch=16 ; wait "
    "psum[1][0]\n"
    "  noc send 0x200 pitch=16 rows=1 bytes=8 -> 0,0 0x300 pitch=32\n"
    "  dma2 store 0x200 pitch=64 -> O[64:65, 0:2]\n"
    "\n"
    "core 0,1   # idle\n";

Program read(const std::string& text) {
  return read_program(text, "test.tprog");
}

// Compares field by field so a failure says where programs differ (Program::operator== only says whether);
// source_file is where it was read from, and Instruction::operator== leaves out the line.
void expect_same_program(const Program& actual, const Program& expected) {
  EXPECT_EQ(actual.name, expected.name);
  EXPECT_EQ(actual.mesh.rows, expected.mesh.rows);
  EXPECT_EQ(actual.mesh.cols, expected.mesh.cols);
  EXPECT_EQ(actual.op, expected.op);
  EXPECT_EQ(actual.tensors, expected.tensors);
  EXPECT_EQ(actual.semaphores, expected.semaphores);
  ASSERT_EQ(actual.cores.size(), expected.cores.size());
  for (size_t i = 0; i < actual.cores.size(); ++i) {
    EXPECT_EQ(actual.cores[i].coord, expected.cores[i].coord) << "core block " << i;
    ASSERT_EQ(actual.cores[i].instructions.size(), expected.cores[i].instructions.size())
        << "core block " << i;
    for (size_t j = 0; j < actual.cores[i].instructions.size(); ++j)
      EXPECT_TRUE(actual.cores[i].instructions[j] == expected.cores[i].instructions[j])
          << "core block " << i << ", instruction " << j << " (line " << actual.cores[i].instructions[j].line
          << ")";
  }
}

// The InputError that reading `text` throws; fails the test if it throws none.
InputError read_error(const std::string& text) {
  try {
    read(text);
  } catch (const InputError& error) {
    return error;
  }
  ADD_FAILURE() << "expected an InputError reading:\n" << text;
  return InputError(SourceLocation{}, "", "no error");
}

// A 2x2 machine's header and the start of core 0,0: the line after it is line 7.
const std::string kHeader =
    "tessera-program 1\n"
    "name t\n"
    "mesh 2x2\n"
    "tensor A bf16 64x64 at 0x0 input seed=1 id=0\n"
    "tensor O fp32 64x64 at 0x2000 output\n"
    "core 0,0\n";
constexpr int kLineAfterHeader = 7;
const std::string kMatmul = "pe ws a=0x0 w=0x100 o=0x200 m=4 n=4 k=4 dtype=bf16 acc=0";

// The error for `line`, the first instruction of core 0,0; checks that it names the line.
InputError instruction_error(const std::string& line) {
  const InputError error = read_error(kHeader + line + "\n");
  EXPECT_EQ(error.where().file, "test.tprog");
  EXPECT_EQ(error.where().line, kLineAfterHeader) << line;
  return error;
}

// The 1-based column of `token` in `line` (its first occurrence at or after `from`).
int column_of(const std::string& line, const std::string& token, size_t from = 0) {
  const size_t position = line.find(token, from);
  EXPECT_NE(position, std::string::npos) << "'" << token << "' in '" << line << "'";
  return static_cast<int>(position) + 1;
}

// ---- reading

TEST(ReadProgram, ReadsTheHeader) {
  const Program program = read(kCanonical);
  EXPECT_EQ(program.name, "bert-ffn.ffn1.ws");
  EXPECT_EQ(program.mesh.rows, 2);
  EXPECT_EQ(program.mesh.cols, 3);
  ASSERT_TRUE(program.op.has_value());
  EXPECT_EQ(program.op->kind, "gemm");
  const std::map<std::string, std::string> attributes = {{"dtype", "bf16"}, {"index", "0"}, {"k", "128"},
                                                         {"m", "128"},      {"n", "64"},    {"name", "ffn1"},
                                                         {"seed", "7"}};
  EXPECT_EQ(program.op->attributes, attributes);
  ASSERT_EQ(program.tensors.size(), 3u);
  const TensorDecl& weights = program.tensors[1];
  EXPECT_EQ(weights.name, "W");
  EXPECT_EQ(weights.dtype, DType::bf16);
  EXPECT_EQ(weights.rows, 128);
  EXPECT_EQ(weights.cols, 64);
  EXPECT_EQ(weights.dram_address, 0x8000u);
  EXPECT_EQ(weights.role, TensorRole::input);
  EXPECT_EQ(weights.seed, 7u);
  EXPECT_EQ(weights.generator_id, 1u);
  EXPECT_EQ(program.tensors[2].role, TensorRole::output);
  EXPECT_EQ(program.tensors[2].dtype, DType::fp32);
  EXPECT_EQ(program.source_file, "test.tprog");
}

TEST(ReadProgram, ReadsCoreBlocksInTheOrderWritten) {
  const Program program = read(kCanonical);
  ASSERT_EQ(program.cores.size(), 3u);
  EXPECT_EQ(program.cores[0].coord, (Coord{0, 0}));
  EXPECT_EQ(program.cores[1].coord, (Coord{1, 2}));
  EXPECT_EQ(program.cores[2].coord, (Coord{0, 1}));
  EXPECT_EQ(program.cores[0].instructions.size(), 5u);
  EXPECT_EQ(program.cores[1].instructions.size(), 3u);
  EXPECT_TRUE(program.cores[2].instructions.empty());
  EXPECT_EQ(program.instruction_count(), 8);
}

TEST(ReadProgram, ReadsALoadWithMulticastAndPitch) {
  const Program program = read(kCanonical);
  const Instruction& multicast = program.cores[0].instructions[0];
  EXPECT_EQ(multicast.queue, (QueueId{QueueKind::dma, 0}));
  const auto& load = std::get<DmaLoad>(multicast.operation);
  EXPECT_EQ(load.source, (TensorRegion{0, 0, 64, 0, 128}));
  EXPECT_EQ(load.sram_address, 0u);
  EXPECT_EQ(load.sram_pitch_bytes, 0);  // packed
  const MeshSpec mesh{2, 3};
  EXPECT_EQ(load.destinations, (std::vector<int>{core_index({0, 0}, mesh), core_index({1, 2}, mesh)}));

  const Instruction& pitched = program.cores[0].instructions[1];
  EXPECT_EQ(pitched.queue, (QueueId{QueueKind::dma, 1}));
  const auto& pitched_load = std::get<DmaLoad>(pitched.operation);
  EXPECT_EQ(pitched_load.source, (TensorRegion{1, 0, 128, 0, 64}));
  EXPECT_EQ(pitched_load.sram_address, 0x4000u);
  EXPECT_EQ(pitched_load.sram_pitch_bytes, 256);
  EXPECT_TRUE(pitched_load.destinations.empty());
}

TEST(ReadProgram, ReadsMatmulsWithEveryKey) {
  const Program program = read(kCanonical);
  const auto& weight_stationary = std::get<PeMatmul>(program.cores[0].instructions[2].operation);
  EXPECT_EQ(weight_stationary.dataflow, Dataflow::ws);
  EXPECT_EQ(weight_stationary.dtype, DType::bf16);
  EXPECT_EQ(weight_stationary.a_address, 0u);
  EXPECT_EQ(weight_stationary.w_address, 0x4000u);
  EXPECT_EQ(weight_stationary.o_address, 0x8000u);
  EXPECT_EQ(weight_stationary.m, 64);
  EXPECT_EQ(weight_stationary.n, 64);
  EXPECT_EQ(weight_stationary.k, 128);
  EXPECT_FALSE(weight_stationary.accumulate);
  EXPECT_EQ(weight_stationary.a_pitch_bytes, 0);
  EXPECT_EQ(weight_stationary.w_pitch_bytes, 256);
  EXPECT_EQ(weight_stationary.o_pitch_bytes, 0);

  const Instruction& second = program.cores[1].instructions[0];
  EXPECT_EQ(second.queue, (QueueId{QueueKind::pe, 0}));
  const auto& output_stationary = std::get<PeMatmul>(second.operation);
  EXPECT_EQ(output_stationary.dataflow, Dataflow::os);
  EXPECT_EQ(output_stationary.dtype, DType::int8);
  EXPECT_EQ(output_stationary.m, 1);
  EXPECT_EQ(output_stationary.n, 2);
  EXPECT_EQ(output_stationary.k, 3);
  EXPECT_TRUE(output_stationary.accumulate);
  EXPECT_EQ(output_stationary.a_pitch_bytes, 16);
  EXPECT_EQ(output_stationary.w_pitch_bytes, 32);
  EXPECT_EQ(output_stationary.o_pitch_bytes, 64);
}

TEST(ReadProgram, ReadsSendsWithPitchesAndAccumulation) {
  const Program program = read(kCanonical);
  const MeshSpec mesh{2, 3};
  const Instruction& reduce = program.cores[0].instructions[3];
  EXPECT_EQ(reduce.queue, (QueueId{QueueKind::noc, 0}));
  const auto& reduction = std::get<NocSend>(reduce.operation);
  EXPECT_EQ(reduction.source_address, 0x8000u);
  EXPECT_EQ(reduction.rows, 64);
  EXPECT_EQ(reduction.row_bytes, 256);
  EXPECT_EQ(reduction.destination_core, core_index({0, 1}, mesh));
  EXPECT_EQ(reduction.destination_address, 0x8000u);
  EXPECT_TRUE(reduction.accumulate);
  EXPECT_EQ(reduction.accumulate_dtype, DType::fp32);

  const auto& copy = std::get<NocSend>(program.cores[1].instructions[1].operation);
  EXPECT_EQ(copy.source_pitch_bytes, 16);
  EXPECT_EQ(copy.destination_core, core_index({0, 0}, mesh));
  EXPECT_EQ(copy.destination_address, 0x300u);
  EXPECT_EQ(copy.destination_pitch_bytes, 32);
  EXPECT_FALSE(copy.accumulate);
}

TEST(ReadProgram, ReadsStoresWithAndWithoutAdd) {
  const Program program = read(kCanonical);
  const auto& accumulating = std::get<DmaStore>(program.cores[0].instructions[4].operation);
  EXPECT_EQ(accumulating.sram_address, 0x8000u);
  EXPECT_EQ(accumulating.sram_pitch_bytes, 0);
  EXPECT_EQ(accumulating.destination, (TensorRegion{2, 0, 64, 0, 64}));
  EXPECT_TRUE(accumulating.accumulate);

  const Instruction& plain = program.cores[1].instructions[2];
  EXPECT_EQ(plain.queue, (QueueId{QueueKind::dma, 2}));
  const auto& store = std::get<DmaStore>(plain.operation);
  EXPECT_EQ(store.sram_pitch_bytes, 64);
  EXPECT_EQ(store.destination, (TensorRegion{2, 64, 1, 0, 2}));
  EXPECT_FALSE(store.accumulate);
}

TEST(ReadProgram, NumbersSemaphoresInTheOrderTheyFirstAppear) {
  const Program program = read(kCanonical);
  EXPECT_EQ(program.semaphores,
            (std::vector<std::string>{"a_full[0]", "w_free", "w_full", "o_full", "psum[1][0]", "o_sent"}));
  const Instruction& matmul = program.cores[0].instructions[2];
  ASSERT_EQ(matmul.waits.size(), 2u);
  EXPECT_EQ(matmul.waits[0].semaphore.id, 0);  // a_full[0], first signalled by the load above
  EXPECT_EQ(matmul.waits[1].semaphore.id, 2);  // w_full
  ASSERT_EQ(matmul.signals.size(), 2u);
  EXPECT_EQ(matmul.signals[1].id, 4);  // psum[1][0]
  // The same name on another core's block is the same semaphore id.
  EXPECT_EQ(program.cores[1].instructions[0].waits[0].semaphore.id, 4);
}

TEST(ReadProgram, SemaphoreWithoutAtIsTheIssuingCoresAndWithAtNamesTheCoreIndex) {
  const Program program = read(kCanonical);
  const MeshSpec mesh{2, 3};
  const Instruction& matmul = program.cores[0].instructions[2];
  EXPECT_EQ(matmul.waits[0].semaphore.core, kSameCore);
  EXPECT_EQ(matmul.signals[0].core, kSameCore);
  EXPECT_EQ(matmul.signals[1].core, core_index({1, 2}, mesh));
  const Instruction& store = program.cores[0].instructions[4];
  ASSERT_EQ(store.waits.size(), 1u);
  EXPECT_EQ(store.waits[0].semaphore.core, core_index({0, 1}, mesh));
}

TEST(ReadProgram, WaitsConsumeOneSignalUnlessCounted) {
  const Program program = read(kCanonical);
  EXPECT_EQ(program.cores[0].instructions[1].waits[0].count, 2);  // w_free*2
  EXPECT_EQ(program.cores[0].instructions[2].waits[0].count, 1);  // a_full[0]
  EXPECT_EQ(program.cores[0].instructions[4].waits[0].count, 3);  // o_sent@0,1*3
}

TEST(ReadProgram, IndexSuffixesArePartOfTheSemaphoreNameInDecimal) {
  const Program program =
      read(kHeader + "  " + kMatmul + " ; wait s[1] s[0x1] s[01] s ; signal s[1][0] s[0][1]\n");
  EXPECT_EQ(program.semaphores, (std::vector<std::string>{"s[1]", "s", "s[1][0]", "s[0][1]"}));
  const Instruction& matmul = program.cores[0].instructions[0];
  EXPECT_EQ(matmul.waits[0].semaphore.id, 0);
  EXPECT_EQ(matmul.waits[1].semaphore.id, 0);
  EXPECT_EQ(matmul.waits[2].semaphore.id, 0);
  EXPECT_EQ(matmul.waits[3].semaphore.id, 1);
}

TEST(ReadProgram, RecordsTheLineOfEveryInstruction) {
  const Program program = read(kCanonical);
  std::vector<int> lines;
  for (const CoreProgram& core : program.cores)
    for (const Instruction& instruction : core.instructions) lines.push_back(instruction.line);
  EXPECT_EQ(lines, (std::vector<int>{10, 11, 12, 13, 14, 17, 18, 19}));
}

TEST(ReadProgram, TheOpLineIsOptional) {
  const Program program = read(kHeader);
  EXPECT_FALSE(program.op.has_value());
  EXPECT_EQ(program.tensors.size(), 2u);
}

TEST(ReadProgram, AcceptsAProgramWithoutTensorsOrCores) {
  const Program program = read("tessera-program 1\nname empty\nmesh 1x1\n");
  EXPECT_EQ(program.name, "empty");
  EXPECT_TRUE(program.tensors.empty());
  EXPECT_TRUE(program.cores.empty());
}

TEST(ReadProgram, HandWrittenSpellingReadsLikeTheCanonicalForm) {
  const Program hand_written = read(kHandWritten);
  expect_same_program(hand_written, read(kCanonical));
  EXPECT_EQ(write_program(hand_written), kCanonical);
  // Lines are those of the hand-written text.
  EXPECT_EQ(hand_written.cores[0].instructions[0].line, 11);
  EXPECT_EQ(hand_written.cores[1].instructions[2].line, 19);
}

// ---- writing and round trips

TEST(WriteProgram, ReproducesCanonicalTextExactly) {
  EXPECT_EQ(write_program(read(kCanonical)), kCanonical);
}

TEST(WriteProgram, ReadingTheWrittenTextGivesTheProgramBack) {
  Program program;
  program.name = "built-in-memory";
  program.mesh = MeshSpec{3, 4};
  program.tensors = {
      TensorDecl{"X", DType::int8, 7, 9, 0xfffffffffff0u, TensorRole::input, ~0ull, 0xffffffffu},
      TensorDecl{"Y", DType::int32, 7, 3, 0x100, TensorRole::output, 0, 0}};
  const int ready = program.semaphore_id("ready");
  const int token = program.semaphore_id("token[12][3]");
  const int issuing_core = core_index({2, 3}, program.mesh);

  Instruction load;
  load.queue = QueueId{QueueKind::dma, 11};
  // Multicast that lists the issuing core itself, and a signal on it named explicitly (not kSameCore).
  load.operation = DmaLoad{TensorRegion{0, 1, 6, 2, 7}, 0xabcdef, 24, {issuing_core, 0, 5}};
  load.signals = {SemaphoreRef{ready, kSameCore}, SemaphoreRef{ready, issuing_core}};

  Instruction matmul;
  matmul.queue = QueueId{QueueKind::pe, 0};
  PeMatmul product;
  product.dataflow = Dataflow::is;
  product.dtype = DType::int8;
  product.a_address = 1;
  product.w_address = 0x20;
  product.o_address = 0x300;
  product.a_pitch_bytes = 12;
  product.o_pitch_bytes = 36;
  product.m = 7;
  product.n = 3;
  product.k = 9;
  product.accumulate = true;
  matmul.operation = product;
  matmul.waits = {SemaphoreWait{SemaphoreRef{ready, kSameCore}, 5}, SemaphoreWait{SemaphoreRef{token, 0}, 1}};

  Instruction send;
  send.queue = QueueId{QueueKind::noc, 0};
  NocSend reduction;
  reduction.source_address = 0x300;
  reduction.rows = 7;
  reduction.row_bytes = 12;
  reduction.destination_core = core_index({0, 0}, program.mesh);
  reduction.destination_address = 0x400;
  reduction.destination_pitch_bytes = 16;
  reduction.accumulate = true;
  reduction.accumulate_dtype = DType::int32;
  send.operation = reduction;
  send.signals = {SemaphoreRef{token, core_index({0, 0}, program.mesh)}};

  Instruction store;
  store.queue = QueueId{QueueKind::dma, 0};
  store.operation = DmaStore{0x300, 0, TensorRegion{1, 0, 7, 0, 3}, false};
  store.waits = {SemaphoreWait{SemaphoreRef{token, kSameCore}, 2}};

  program.cores = {CoreProgram{Coord{2, 3}, {load, matmul, send, store}}, CoreProgram{Coord{0, 0}, {}}};

  const Program read_back = read(write_program(program));
  expect_same_program(read_back, program);
  EXPECT_EQ(write_program(read_back), write_program(program));
}

TEST(WriteProgram, LeavesOutPackedPitchesUnitCountsAndAnAbsentOp) {
  Program program;
  program.name = "minimal";
  program.mesh = MeshSpec{1, 2};
  program.tensors = {TensorDecl{"T", DType::fp16, 2, 8, 0, TensorRole::output, 0, 0}};
  const int done = program.semaphore_id("done");
  Instruction load;
  load.queue = QueueId{QueueKind::dma, 0};
  load.operation = DmaLoad{TensorRegion{0, 0, 2, 0, 8}, 0x40, 0, {}};
  load.waits = {SemaphoreWait{SemaphoreRef{done, 1}, 1}};
  Instruction send;
  send.queue = QueueId{QueueKind::noc, 0};
  NocSend copy;
  copy.source_address = 0x40;
  copy.rows = 2;
  copy.row_bytes = 16;
  copy.destination_core = 1;
  copy.destination_address = 0x1000;
  copy.accumulate_dtype = DType::int32;  // ignored: not accumulating
  send.operation = copy;
  send.signals = {SemaphoreRef{done, kSameCore}};
  program.cores = {CoreProgram{Coord{0, 0}, {load, send}}};
  EXPECT_EQ(write_program(program),
            "tessera-program 1\n"
            "name minimal\n"
            "mesh 1x2\n"
            "tensor T fp16 2x8 at 0x0 output\n"
            "\n"
            "core 0,0\n"
            "  dma0 load T[0:2, 0:8] -> 0x40 ; wait done@0,1\n"
            "  noc send 0x40 rows=2 bytes=16 -> 0,1 0x1000 ; signal done\n");
}

// The text declares no semaphores: reading numbers them by first appearance, so a program whose ids were
// handed out in another order reads back with the same names on every reference but other ids.
TEST(WriteProgram, SemaphoresReadBackInTheOrderOfFirstAppearance) {
  Program program = read(kHeader);
  const int unused = program.semaphore_id("unused");
  const int late = program.semaphore_id("late");
  const int early = program.semaphore_id("early");
  Instruction matmul = read(kHeader + "  " + kMatmul + "\n").cores[0].instructions[0];
  matmul.waits = {SemaphoreWait{SemaphoreRef{early, kSameCore}, 1}};
  matmul.signals = {SemaphoreRef{late, kSameCore}};
  program.cores[0].instructions = {matmul};
  ASSERT_EQ(unused, 0);

  const Program read_back = read(write_program(program));
  EXPECT_EQ(read_back.semaphores, (std::vector<std::string>{"early", "late"}));
  const Instruction& instruction = read_back.cores[0].instructions[0];
  EXPECT_EQ(read_back.semaphores[static_cast<size_t>(instruction.waits[0].semaphore.id)], "early");
  EXPECT_EQ(read_back.semaphores[static_cast<size_t>(instruction.signals[0].id)], "late");
  EXPECT_EQ(write_program(read_back), write_program(program));
  // Numbered by appearance (as the mapper leaves its programs), the round trip is exact, ids included.
  program.number_semaphores_by_appearance();
  EXPECT_EQ(program.semaphores, (std::vector<std::string>{"early", "late"}));
  EXPECT_TRUE(read(write_program(program)) == program);
}

TEST(WriteProgram, RefusesNamesThatWouldReadBackDifferently) {
  Program spaced = read(kHeader);
  spaced.name = "two words";
  EXPECT_THROW(write_program(spaced), InternalError);
  Program unnamed = read(kHeader);
  unnamed.name.clear();
  EXPECT_THROW(write_program(unnamed), InternalError);
  Program bad_semaphore = read(kHeader);
  bad_semaphore.semaphores = {"buffer[0]_full"};  // reads back as two semaphores
  EXPECT_THROW(write_program(bad_semaphore), InternalError);
  Program leading_zero = read(kHeader);
  leading_zero.semaphores = {"buffer[01]"};  // reads back as buffer[1]
  EXPECT_THROW(write_program(leading_zero), InternalError);
}

TEST(WriteProgram, LargeProgramSurvivesTheRoundTrip) {
  Program program;
  program.name = "large";
  program.mesh = MeshSpec{4, 4};
  program.tensors = {TensorDecl{"A", DType::bf16, 4096, 4096, 0, TensorRole::input, 3, 0},
                     TensorDecl{"O", DType::fp32, 4096, 4096, 0x2000000, TensorRole::output, 0, 0}};
  constexpr int kStepsPerCore = 600;
  for (int core = 0; core < program.mesh.cores(); ++core) {
    CoreProgram block{core_coord(core, program.mesh), {}};
    for (int step = 0; step < kStepsPerCore; ++step) {
      const std::string buffer_full = "buffer_full[" + std::to_string(step % 4) + "]";
      Instruction load;
      load.queue = QueueId{QueueKind::dma, step % 2};
      load.operation = DmaLoad{TensorRegion{0, step, 1, core * 64, 64}, 0x1000u * (step % 4), 0, {}};
      load.signals = {SemaphoreRef{program.semaphore_id(buffer_full), kSameCore}};
      Instruction matmul;
      matmul.queue = QueueId{QueueKind::pe, 0};
      PeMatmul product;
      product.m = product.n = product.k = 64;
      product.o_address = 0x8000;
      product.accumulate = step > 0;
      matmul.operation = product;
      matmul.waits = {SemaphoreWait{SemaphoreRef{program.semaphore_id(buffer_full), kSameCore}, 1}};
      matmul.signals = {SemaphoreRef{program.semaphore_id("neighbour_ready"), (core + 1) % 16}};
      block.instructions.push_back(load);
      block.instructions.push_back(matmul);
    }
    Instruction store;
    store.queue = QueueId{QueueKind::dma, 0};
    store.operation = DmaStore{0x8000, 0, TensorRegion{1, core * 64, 64, 0, 64}, false};
    store.waits = {
        SemaphoreWait{SemaphoreRef{program.semaphore_id("neighbour_ready"), kSameCore}, kStepsPerCore}};
    block.instructions.push_back(store);
    program.cores.push_back(block);
  }
  const std::string text = write_program(program);
  const Program read_back = read(text);
  expect_same_program(read_back, program);
  EXPECT_EQ(read_back.instruction_count(), 16 * (2 * kStepsPerCore + 1));
  EXPECT_EQ(write_program(read_back), text);
}

// ---- header errors

TEST(ReadProgramErrors, FirstLineMustBeTheVersion) {
  const InputError error = read_error("name t\nmesh 1x1\n");
  EXPECT_EQ(error.where().line, 1);
  EXPECT_EQ(error.where().column, 1);
  EXPECT_EQ(error.field(), "tessera-program");
  EXPECT_EQ(error.message(), "expected 'tessera-program 1' as the first line, found 'name'");
}

TEST(ReadProgram, CommentsAndBlankLinesMayPrecedeTheVersionLine) {
  EXPECT_EQ(read("# generated\n\ntessera-program 1\nname t\nmesh 1x1\n").name, "t");
}

TEST(ReadProgramErrors, UnsupportedVersion) {
  const InputError error = read_error("tessera-program 2\nname t\nmesh 1x1\n");
  EXPECT_EQ(error.where().line, 1);
  EXPECT_EQ(error.where().column, 17);
  EXPECT_EQ(error.message(), "unsupported format version '2'; this tessera reads version 1");
  EXPECT_EQ(read_error("tessera-program\n").message(),
            "expected the format version after 'tessera-program', found the end of the line");
}

TEST(ReadProgramErrors, EmptyFile) {
  const InputError error = read_error("# nothing here\n\n");
  EXPECT_EQ(error.where().line, 1);
  EXPECT_NE(error.message().find("expected 'tessera-program 1' as the first line"), std::string::npos);
}

TEST(ReadProgramErrors, UnknownHeaderKeywordSuggestsTheClosest) {
  const InputError error = read_error("tessera-program 1\n  nmae t\n");
  EXPECT_EQ(error.where().str(), "test.tprog:2:3");
  EXPECT_EQ(error.field(), "header");
  EXPECT_EQ(error.message(), "unknown header keyword 'nmae'; did you mean 'name'?");
  EXPECT_FALSE(error.hint().empty());
}

TEST(ReadProgramErrors, HeaderLinesComeInTheDocumentedOrder) {
  const InputError error = read_error(
      "tessera-program 1\nname t\nmesh 1x1\ntensor O fp32 1x1 at 0x0 output\n"
      "op gemm m=1\n");
  EXPECT_EQ(error.where().line, 5);
  EXPECT_EQ(error.field(), "op");
  EXPECT_EQ(error.message(), "'op' line after the 'tensor' line");
}

TEST(ReadProgramErrors, HeaderLinesAppearOnce) {
  const InputError error = read_error("tessera-program 1\nname t\nmesh 1x1\nmesh 2x2\n");
  EXPECT_EQ(error.where().line, 4);
  EXPECT_EQ(error.message(), "duplicate 'mesh' line");
  EXPECT_EQ(error.hint(), "the first is on line 3");
  EXPECT_EQ(
      read_error("tessera-program 1\nname t\nmesh 1x1\ntensor O fp32 1x1 at 0x0 output\nname u\n").message(),
      "duplicate 'name' line");
}

TEST(ReadProgramErrors, NameAndMeshAreRequired) {
  const InputError no_name = read_error("tessera-program 1\nmesh 1x1\n");
  EXPECT_EQ(no_name.where().line, 2);
  EXPECT_EQ(no_name.message(), "missing 'name' line before this 'mesh' line");
  const InputError no_mesh = read_error("tessera-program 1\nname t\ncore 0,0\n");
  EXPECT_EQ(no_mesh.where().line, 3);
  EXPECT_EQ(no_mesh.message(), "missing 'mesh' line before this 'core' line");
  const InputError at_end = read_error("tessera-program 1\nname t\n");
  EXPECT_EQ(at_end.message(), "the program has no 'mesh' line");
}

TEST(ReadProgramErrors, HeaderLineAfterACoreBlock) {
  const InputError error = read_error(kHeader + "tensor B bf16 1x1 at 0x0 output\n");
  EXPECT_EQ(error.where().line, kLineAfterHeader);
  EXPECT_EQ(error.where().column, 1);
  EXPECT_EQ(error.message(), "'tensor' belongs to the header, before the first 'core' line");
}

TEST(ReadProgramErrors, ProgramNameHasNoBlanks) {
  const InputError error = read_error("tessera-program 1\nname my program\nmesh 1x1\n");
  EXPECT_EQ(error.where().column, 9);
  EXPECT_EQ(error.message(), "expected the end of the line after the program name, found 'program'");
}

TEST(ReadProgramErrors, MeshDimensionsArePositiveDecimals) {
  const InputError zero_rows = read_error("tessera-program 1\nname t\nmesh 0x4\n");
  EXPECT_EQ(zero_rows.where().str(), "test.tprog:3:6");
  EXPECT_EQ(zero_rows.field(), "mesh");
  EXPECT_EQ(zero_rows.message(), "the mesh 0x4 has a zero dimension; both must be at least 1");
  EXPECT_EQ(read_error("tessera-program 1\nname t\nmesh 4x0\n").message(),
            "the mesh 4x0 has a zero dimension; both must be at least 1");
  EXPECT_EQ(read_error("tessera-program 1\nname t\nmesh 4\n").message(),
            "expected the mesh as <rows>x<cols> in decimal, found '4'");
  EXPECT_EQ(read_error("tessera-program 1\nname t\nmesh 4 x 4\n").message(),
            "expected the mesh as <rows>x<cols> in decimal, found '4'");
  EXPECT_EQ(read_error("tessera-program 1\nname t\nmesh 65536x65536\n").message(),
            "a 65536x65536 mesh has more cores than tessera can number");
}

TEST(ReadProgramErrors, OpAttributesAreKeyValuePairsGivenOnce) {
  const std::string header = "tessera-program 1\nname t\nmesh 1x1\n";
  const InputError duplicate = read_error(header + "op gemm m=1 n=2 m=3\n");
  EXPECT_EQ(duplicate.where().column, 17);
  EXPECT_EQ(duplicate.message(), "duplicate attribute 'm'");
  EXPECT_EQ(read_error(header + "op gemm m 1\n").message(),
            "expected '=' after the attribute 'm', found '1'");
  EXPECT_EQ(read_error(header + "op gemm m=\n").message(),
            "expected the value of the attribute 'm', found the end of the line");
  EXPECT_EQ(read_error(header + "op\n").message(), "expected the operator kind, found the end of the line");
}

// ---- tensor errors

const std::string kMeshOnly = "tessera-program 1\nname t\nmesh 2x2\n";

TEST(ReadProgramErrors, DuplicateTensorNamesTheFirst) {
  const InputError error =
      read_error(kMeshOnly + "tensor A bf16 1x1 at 0x0 output\ntensor A bf16 1x1 at 0x10 output\n");
  EXPECT_EQ(error.where().str(), "test.tprog:5:8");
  EXPECT_EQ(error.field(), "tensor A");
  EXPECT_EQ(error.message(), "duplicate tensor 'A'");
  EXPECT_EQ(error.hint(), "the first is declared on line 4");
}

TEST(ReadProgramErrors, UnknownTensorDtypeSuggestsTheClosest) {
  const InputError error = read_error(kMeshOnly + "tensor A bf61 1x1 at 0x0 output\n");
  EXPECT_EQ(error.where().column, 10);
  EXPECT_EQ(error.field(), "tensor A");
  EXPECT_EQ(error.message(), "unknown dtype 'bf61'; did you mean 'bf16'?");
}

TEST(ReadProgramErrors, InputTensorsNeedSeedAndId) {
  const InputError no_id = read_error(kMeshOnly + "tensor A bf16 2x2 at 0x0 input seed=1\n");
  EXPECT_EQ(no_id.where().column, column_of("tensor A bf16 2x2 at 0x0 input seed=1", "input"));
  EXPECT_EQ(no_id.message(), "an input tensor is missing 'id='");
  EXPECT_EQ(read_error(kMeshOnly + "tensor A bf16 2x2 at 0x0 input id=1\n").message(),
            "an input tensor is missing 'seed='");
  EXPECT_EQ(read_error(kMeshOnly + "tensor A bf16 2x2 at 0x0 input seed=1 id=0 seed=2\n").message(),
            "duplicate 'seed'");
  EXPECT_EQ(read_error(kMeshOnly + "tensor A bf16 2x2 at 0x0 input sead=1 id=0\n").message(),
            "unknown key 'sead' for an input tensor; did you mean 'seed'?");
  EXPECT_EQ(read_error(kMeshOnly + "tensor A bf16 2x2 at 0x0 input seed=1 id=4294967296\n").message(),
            "4294967296 is too large for the generator id (at most 4294967295)");
}

TEST(ReadProgramErrors, OutputTensorsTakeNoSeed) {
  const InputError error = read_error(kMeshOnly + "tensor O fp32 2x2 at 0x0 output seed=1\n");
  EXPECT_EQ(error.where().column, 33);
  EXPECT_EQ(error.message(), "unknown key 'seed' for an output tensor");
  EXPECT_EQ(error.hint(), "outputs start as zeros; only inputs take seed= and id=");
}

TEST(ReadProgramErrors, TensorLineShape) {
  EXPECT_EQ(read_error(kMeshOnly + "tensor O fp32 2x2 0x0 output\n").message(),
            "expected 'at' and the tensor's DRAM address, or 'view', found '0x0'");
  EXPECT_EQ(read_error(kMeshOnly + "tensor O fp32 2x2 at 0x0 ouput\n").message(),
            "unknown tensor role 'ouput'; did you mean 'output'?");
  EXPECT_EQ(read_error(kMeshOnly + "tensor O fp32 0x2 at 0x0 output\n").message(),
            "the tensor shape 0x2 has a zero dimension; both must be at least 1");
  EXPECT_EQ(read_error(kMeshOnly + "tensor 1O fp32 2x2 at 0x0 output\n").message(),
            "expected a tensor name, found '1O'");
}

// ---- core block errors

TEST(ReadProgramErrors, InstructionBeforeAnyCore) {
  const InputError error = read_error(kMeshOnly + "  pe ws a=0 w=0 o=0 m=1 n=1 k=1 dtype=bf16 acc=0\n");
  EXPECT_EQ(error.where().str(), "test.tprog:4:3");
  EXPECT_EQ(error.message(), "instruction for queue pe before any 'core' line");
}

TEST(ReadProgramErrors, DuplicateCoreBlockNamesTheFirst) {
  const InputError error = read_error(kHeader + "core 1,0\ncore 0,0\n");
  EXPECT_EQ(error.where().str(), "test.tprog:8:6");
  EXPECT_EQ(error.field(), "core 0,0");
  EXPECT_EQ(error.message(), "core 0,0 appears a second time");
  EXPECT_EQ(error.hint(), "its block starts on line 6; a core appears at most once");
}

TEST(ReadProgramErrors, CoreLineNamesOneCoreInsideTheMesh) {
  const InputError outside = read_error(kHeader + "core 2,0\n");
  EXPECT_EQ(outside.where().column, 6);
  EXPECT_EQ(outside.message(), "core 2,0 is outside the 2x2 mesh");
  EXPECT_EQ(outside.hint(), "rows are 0..1 and columns 0..1");
  EXPECT_EQ(read_error(kHeader + "core 1 0\n").message(),
            "expected ',' between the core's row and column, found '0'");
  EXPECT_EQ(read_error(kHeader + "core 1,0 pe\n").message(),
            "expected the end of the line after the core's row,col, found 'pe'");
}

TEST(ReadProgramErrors, UnknownQueueSuggestsTheClosest) {
  const std::string line = "  dam0 load A[0:1, 0:1] -> 0x0";
  const InputError error = instruction_error(line);
  EXPECT_EQ(error.where().column, 3);
  EXPECT_EQ(error.field(), "core 0,0");
  EXPECT_EQ(error.message(), "unknown queue 'dam0'; did you mean 'dma0'?");
  EXPECT_EQ(instruction_error("dam3 load A[0:1, 0:1] -> 0x0").message(),
            "unknown queue 'dam3'; did you mean 'dma3'?");
  EXPECT_EQ(instruction_error("pee ws").message(), "unknown queue 'pee'; did you mean 'pe'?");
  EXPECT_EQ(instruction_error("-> x").message(),
            "expected a queue (dma0, dma1, ..., pe or noc) or 'core', found '->'");
}

TEST(ReadProgramErrors, OperationMustBelongToItsQueue) {
  const InputError wrong_queue = instruction_error("pe load A[0:1, 0:1] -> 0x0");
  EXPECT_EQ(wrong_queue.where().column, 4);
  EXPECT_EQ(wrong_queue.field(), "core 0,0 pe #0");
  EXPECT_EQ(wrong_queue.message(), "unknown operation 'load' for queue pe");
  EXPECT_EQ(
      wrong_queue.hint(),
      "the pe queue runs ws, os, is, rs, conv or post; 'load' runs on the DMA queues (dma0, dma1, ...)");
  EXPECT_EQ(instruction_error("dma1 lod A[0:1, 0:1] -> 0x0").message(),
            "unknown operation 'lod' for queue dma1; did you mean 'load'?");
  EXPECT_EQ(instruction_error("pe wss a=0").message(),
            "unknown operation 'wss' for queue pe; did you mean 'ws'?");
  EXPECT_EQ(instruction_error("noc store 0x0 -> A[0:1, 0:1]").hint(),
            "the noc queue runs send; 'store' runs on the DMA queues (dma0, dma1, ...)");
  EXPECT_EQ(instruction_error("noc").message(),
            "expected an operation for queue noc, found the end of the line");
}

TEST(ReadProgramErrors, FieldNamesTheInstructionByItsPositionInTheQueue) {
  const InputError error =
      read_error(kHeader + "  " + kMatmul + "\n  dma0 load A[0:1, 0:1] -> 0x0\n  " + kMatmul + " m=2\n");
  EXPECT_EQ(error.where().line, kLineAfterHeader + 2);
  EXPECT_EQ(error.field(), "core 0,0 pe #1");
  EXPECT_EQ(error.message(), "duplicate 'm'");
}

TEST(ReadProgramErrors, UnknownTensorListsTheDeclaredOnes) {
  const std::string line = "dma0 load B[0:1, 0:1] -> 0x0";
  const InputError error = instruction_error(line);
  EXPECT_EQ(error.where().column, column_of(line, "B"));
  EXPECT_EQ(error.field(), "core 0,0 dma0 #0");
  // Any one-letter name is one edit from another (common/text.hpp, closest_match).
  EXPECT_EQ(error.message(), "unknown tensor 'B'; did you mean 'A'?");
  EXPECT_EQ(error.hint(), "declared tensors: A, O");
  EXPECT_EQ(instruction_error("dma0 store 0x0 -> Out[0:1, 0:1]").message(),
            "unknown tensor 'Out'; did you mean 'O'?");
  const InputError none_declared = read_error(kMeshOnly + "core 0,0\n  dma0 load A[0:1, 0:1] -> 0x0\n");
  EXPECT_EQ(none_declared.message(), "unknown tensor 'A'");
  EXPECT_EQ(none_declared.hint(), "no tensors are declared; declare them with 'tensor' lines in the header");
}

TEST(ReadProgramErrors, MalformedRegion) {
  const std::string line = "dma0 load A[0:128 0:64] -> 0x0";
  const InputError error = instruction_error(line);
  EXPECT_EQ(error.where().column, column_of(line, "0:64"));
  EXPECT_EQ(error.message(), "expected ',' between the row range and the column range, found '0:64]'");
  EXPECT_EQ(error.hint(), "a region is written T[r0:r1, c0:c1]");
  EXPECT_EQ(instruction_error("dma0 load A 0:1, 0:1 -> 0x0").message(),
            "expected '[' after the tensor name, found '0:1,'");
  EXPECT_EQ(instruction_error("dma0 load A[0-1, 0:1] -> 0x0").message(),
            "expected ':' between the first row and the end row, found '-1,'");
  EXPECT_EQ(instruction_error("dma0 load A[0:1, 0:1 -> 0x0").message(),
            "expected ']' after the column range, found '->'");
  EXPECT_EQ(instruction_error("dma0 load A[0:1, 0:1] 0x0").message(),
            "expected '->' and the SRAM address after the region, found '0x0'");
}

TEST(ReadProgramErrors, RangesEndAfterTheyStart) {
  const std::string reversed = "dma0 load A[8:4, 0:1] -> 0x0";
  const InputError error = instruction_error(reversed);
  EXPECT_EQ(error.where().column, column_of(reversed, "8:4"));
  EXPECT_EQ(error.message(), "the row range 8:4 is empty; the end must be greater than the start");
  const std::string empty = "dma0 store 0x0 -> O[0:1, 3:3]";
  EXPECT_EQ(instruction_error(empty).where().column, column_of(empty, "3:3"));
  EXPECT_EQ(instruction_error(empty).message(),
            "the column range 3:3 is empty; the end must be greater than the start");
}

TEST(ReadProgramErrors, MalformedNumbers) {
  const std::string hex = "dma0 load A[0:1, 0:1] -> 0x1g";
  const InputError error = instruction_error(hex);
  EXPECT_EQ(error.where().column, column_of(hex, "0x1g"));
  EXPECT_EQ(error.message(), "malformed number '0x1g' for an SRAM address");
  EXPECT_EQ(error.hint(), "integers are decimal (128) or hexadecimal (0x80)");
  EXPECT_EQ(instruction_error("pe ws a=0x0 w=0x100 o=0x200 m=1.5 n=4 k=4 dtype=bf16 acc=0").message(),
            "malformed number '1.5' for m");
  EXPECT_EQ(instruction_error("dma0 load A[0:1, 0:1] -> 0x").message(),
            "malformed number '0x' for an SRAM address");
  EXPECT_EQ(instruction_error("dma0 load A[0:1, 0:1] -> 0x10000000000000000").message(),
            "0x10000000000000000 is too large for an SRAM address (at most 18446744073709551615)");
  const InputError negative = instruction_error("dma0 load A[0:1, 0:1] -> -16");
  EXPECT_EQ(negative.message(), "expected an SRAM address, found '-16'");
  EXPECT_EQ(negative.hint(), "addresses and sizes are non-negative");
}

TEST(ReadProgramErrors, UnknownDtypesSuggestTheClosest) {
  const std::string line = "pe ws a=0x0 w=0x100 o=0x200 m=4 n=4 k=4 dtype=bf61 acc=0";
  const InputError error = instruction_error(line);
  EXPECT_EQ(error.where().column, column_of(line, "bf61"));
  EXPECT_EQ(error.message(), "unknown dtype 'bf61'; did you mean 'bf16'?");
  const InputError accumulation = instruction_error("noc send 0x0 rows=1 bytes=4 -> 0,1 0x0 add=int8");
  EXPECT_EQ(accumulation.message(), "unknown accumulation type 'int8'; did you mean 'int32'?");
  EXPECT_EQ(accumulation.hint(), "expected fp32, int32, bf16 or fp16");
  const std::string psum_line = "pe ws a=0x0 w=0x100 o=0x200 m=4 n=4 k=4 dtype=bf16 acc=0 psum=fp32";
  const InputError psum = instruction_error(psum_line);
  EXPECT_EQ(psum.where().column, column_of(psum_line, "fp32"));
  EXPECT_EQ(psum.message(), "unknown partial-sum type 'fp32'; did you mean 'fp16'?");
  EXPECT_EQ(psum.hint(), "expected bf16 or fp16");
}

TEST(ReadProgramErrors, MatmulNeedsEveryRequiredKey) {
  const std::vector<std::string> options = {"a=0x0", "w=0x100", "o=0x200",    "m=4",
                                            "n=4",   "k=4",     "dtype=bf16", "acc=0"};
  for (size_t missing = 0; missing < options.size(); ++missing) {
    std::string line = "pe ws";
    for (size_t i = 0; i < options.size(); ++i)
      if (i != missing) line += " " + options[i];
    line += " ; signal done";
    const InputError error = instruction_error(line);
    const std::string key = options[missing].substr(0, options[missing].find('=') + 1);
    EXPECT_EQ(error.message(), "ws is missing '" + key + "'");
    EXPECT_EQ(error.where().column, 4) << key;
    EXPECT_NE(error.hint().find("a matmul is written"), std::string::npos);
  }
}

TEST(ReadProgramErrors, SendNeedsRowsAndBytes) {
  const InputError error = instruction_error("noc send 0x0 bytes=4 -> 0,1 0x0");
  EXPECT_EQ(error.where().column, 5);
  EXPECT_EQ(error.message(), "send is missing 'rows='");
  EXPECT_EQ(instruction_error("noc send 0x0 rows=1 -> 0,1 0x0").message(), "send is missing 'bytes='");
  EXPECT_EQ(instruction_error("noc send 0x0 rows=1 bytes=4").message(),
            "expected '->' and the destination core, found the end of the line");
}

TEST(ReadProgramErrors, KeysAppearOnceAndUnknownKeysSuggestTheClosest) {
  const std::string duplicate = kMatmul + " k=8";
  const InputError error = instruction_error(duplicate);
  EXPECT_EQ(error.where().column, column_of(duplicate, "k=8"));
  EXPECT_EQ(error.message(), "duplicate 'k'");
  const std::string unknown = kMatmul + " kk=8";
  EXPECT_EQ(instruction_error(unknown).where().column, column_of(unknown, "kk"));
  EXPECT_EQ(instruction_error(unknown).message(), "unknown key 'kk' for ws; did you mean 'k'?");
  EXPECT_EQ(instruction_error("dma0 load A[0:1, 0:1] -> 0x0 pich=64").message(),
            "unknown key 'pich' for load; did you mean 'pitch'?");
  EXPECT_EQ(instruction_error("dma0 store 0x0 -> O[0:1, 0:1] ad").message(),
            "unknown key 'ad' for store; did you mean 'add'?");
  EXPECT_EQ(instruction_error("noc send 0x0 rows=1 bytes=4 -> 0,1 0x0 pitch=4 pitch=8").message(),
            "duplicate 'pitch'");
  EXPECT_EQ(instruction_error("dma0 load A[0:1, 0:1] -> 0x0 pitch 64").message(),
            "expected '=' after 'pitch', found '64'");
}

TEST(ReadProgramErrors, AccIsZeroOrOneAndSizesArePositive) {
  const std::string accumulate = kMatmul.substr(0, kMatmul.size() - 1) + "2";
  const InputError error = instruction_error(accumulate);
  EXPECT_EQ(error.where().column, static_cast<int>(accumulate.size()));
  EXPECT_EQ(error.message(), "acc must be 0 or 1, found 2");
  const std::string zero_k = "pe ws a=0x0 w=0x100 o=0x200 m=4 n=4 k=0 dtype=bf16 acc=0";
  EXPECT_EQ(instruction_error(zero_k).where().column, column_of(zero_k, "0 dtype"));
  EXPECT_EQ(instruction_error(zero_k).message(), "k must be at least 1");
  EXPECT_EQ(instruction_error("noc send 0x0 rows=0 bytes=4 -> 0,1 0x0").message(), "rows must be at least 1");
}

TEST(ReadProgramErrors, BadSemaphoreSyntax) {
  struct Case {
    std::string synchronisation;
    std::string token;  // where the error points
    std::string message;
  };
  const std::vector<Case> cases = {
      {"; wait", "", "expected a semaphore name, found the end of the line"},
      {"; wait 3s", "3s", "expected a semaphore name, found '3s'"},
      {"; wait s[", "", "expected a semaphore index, found the end of the line"},
      {"; wait s[0", "", "expected ']' after the semaphore index, found the end of the line"},
      {"; wait s[x]", "x]", "malformed number 'x' for a semaphore index"},
      {"; wait s@0", "", "expected ',' between the core's row and column, found the end of the line"},
      {"; wait s,t", ",t", "expected a semaphore name, found ',t'"},
      {"; wait s*", "", "expected a wait count, found the end of the line"},
      {"; signal @0,1", "@0,1", "expected a semaphore name, found '@0,1'"},
      {"; signal s*2", "*2", "a signal posts exactly one signal; counts (*N) are for waits"},
      {"; signal s ; wait t", "wait", "'; wait' after '; signal'"},
      {"; wait s ; wait t", "wait t", "duplicate '; wait'"},
      {"; signal s ; signal t", "signal t", "duplicate '; signal'"},
      {"; wiat s", "wiat", "unknown section 'wiat'; did you mean 'wait'?"},
      {";", "", "expected 'wait' or 'signal' after ';', found the end of the line"},
  };
  for (const Case& c : cases) {
    const std::string line = kMatmul + " " + c.synchronisation;
    const InputError error = instruction_error(line);
    EXPECT_EQ(error.message(), c.message) << line;
    const int column =
        c.token.empty() ? static_cast<int>(line.size()) + 1 : column_of(line, c.token, kMatmul.size());
    EXPECT_EQ(error.where().column, column) << line;
  }
}

TEST(ReadProgramErrors, WaitCountIsAtLeastOne) {
  const std::string line = kMatmul + " ; wait ready*0";
  const InputError error = instruction_error(line);
  EXPECT_EQ(error.where().column, static_cast<int>(line.size()));
  EXPECT_EQ(error.message(), "a wait count must be at least 1");
}

TEST(ReadProgramErrors, CoordinatesLieInsideTheMesh) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kMatmul + " ; wait s@0,2", "0,2"},
      {kMatmul + " ; signal s@2,0", "2,0"},
      {"dma0 load A[0:1, 0:1] -> 0x0 to 0,1 3,0", "3,0"},
      {"noc send 0x0 rows=1 bytes=4 -> 5,5 0x0", "5,5"},
  };
  for (const auto& [line, coord] : cases) {
    const InputError error = instruction_error(line);
    EXPECT_EQ(error.where().column, column_of(line, coord)) << line;
    EXPECT_EQ(error.message(), "core " + coord + " is outside the 2x2 mesh") << line;
  }
}

TEST(ReadProgramErrors, MulticastListsEachCoreOnce) {
  const std::string line = "dma0 load A[0:1, 0:1] -> 0x0 to 0,1 1,1 0,1";
  const InputError error = instruction_error(line);
  EXPECT_EQ(error.where().column, column_of(line, "0,1", column_of(line, "1,1")));
  EXPECT_EQ(error.message(), "core 0,1 is listed twice");
  EXPECT_EQ(instruction_error("dma0 load A[0:1, 0:1] -> 0x0 to").message(),
            "expected a core row, found the end of the line");
}

TEST(ReadProgramErrors, NothingMayFollowTheOperation) {
  const std::string line = "dma0 store 0x0 -> O[0:1, 0:1] add add";
  const InputError error = instruction_error(line);
  EXPECT_EQ(error.where().column, static_cast<int>(line.size()) - 2);
  EXPECT_EQ(error.message(), "duplicate 'add'");
  EXPECT_EQ(instruction_error(kMatmul + " ; signal s ]").message(), "expected a semaphore name, found ']'");
}

// ---- files

TEST(ReadProgramFile, MissingFileNamesThePath) {
  const std::string path = testing::TempDir() + "no-such-program.tprog";
  try {
    read_program_file(path);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.where().file, path);
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos);
    EXPECT_NE(error.message().find("cannot open tile program"), std::string::npos);
  }
}

TEST(ReadProgramFile, ReadsTheFileAndRecordsItsPath) {
  const std::string path = testing::TempDir() + "program_text_test.tprog";
  std::ofstream(path) << kCanonical;
  const Program program = read_program_file(path);
  std::remove(path.c_str());
  EXPECT_EQ(program.source_file, path);
  EXPECT_EQ(write_program(program), kCanonical);
  EXPECT_EQ(location_of(program, program.cores[0].instructions[2]).str(), path + ":12");
}

}  // namespace
}  // namespace tessera::arch

namespace tessera::arch {
namespace {

const std::string kConvLine =
    "pe conv rs a=0x0 w=0x100 o=0x200 e=6 q=6 m=3 c=2 ih=7 iw=6 r=3 s=3 stride=1 dilation=2 pad_top=1 "
    "pad_left=2 dtype=bf16 acc=1 a_pitch=8 w_pitch=16";

TEST(ReadProgram, ReadsConvsWithEveryKey) {
  const Program program = read(kHeader + kConvLine + "\n");
  const auto& conv = operation_as<PeConv>(program.cores[0].instructions[0].operation);
  EXPECT_EQ(conv.dataflow, Dataflow::rs);
  EXPECT_EQ(conv.dtype, DType::bf16);
  EXPECT_EQ(conv.a_address, 0u);
  EXPECT_EQ(conv.w_address, 0x100u);
  EXPECT_EQ(conv.o_address, 0x200u);
  EXPECT_EQ(conv.e, 6);
  EXPECT_EQ(conv.q, 6);
  EXPECT_EQ(conv.m, 3);
  EXPECT_EQ(conv.c, 2);
  EXPECT_EQ(conv.ih, 7);
  EXPECT_EQ(conv.iw, 6);
  EXPECT_EQ(conv.r, 3);
  EXPECT_EQ(conv.s, 3);
  EXPECT_EQ(conv.stride, 1);
  EXPECT_EQ(conv.dilation, 2);
  EXPECT_EQ(conv.pad_top, 1);
  EXPECT_EQ(conv.pad_left, 2);
  EXPECT_TRUE(conv.accumulate);
  EXPECT_EQ(conv.a_pitch_bytes, 8);
  EXPECT_EQ(conv.w_pitch_bytes, 16);
  EXPECT_EQ(conv.o_pitch_bytes, 0);
  EXPECT_EQ(conv.macs(), 6 * 6 * 3 * 2 * 3 * 3);
}

TEST(ReadProgram, ConvStrideDilationAndPaddingDefaultToTheUnpaddedUnitConv) {
  const Program program =
      read(kHeader +
           "pe conv ws a=0x0 w=0x100 o=0x200 e=2 q=2 m=1 c=1 ih=4 iw=4 r=3 s=3 dtype=fp32 "
           "acc=0\n");
  const auto& conv = operation_as<PeConv>(program.cores[0].instructions[0].operation);
  EXPECT_EQ(conv.dataflow, Dataflow::ws);
  EXPECT_EQ(conv.stride, 1);
  EXPECT_EQ(conv.dilation, 1);
  EXPECT_EQ(conv.pad_top, 0);
  EXPECT_EQ(conv.pad_left, 0);
}

TEST(WriteProgram, AConvReadsBackAsTheSameInstruction) {
  const Program program = read(kHeader + kConvLine + "\n");
  const std::string text = write_program(program);
  EXPECT_NE(
      text.find("  pe conv rs a=0x0 w=0x100 o=0x200 e=6 q=6 m=3 c=2 ih=7 iw=6 r=3 s=3 stride=1 dilation=2 "
                "pad_top=1 pad_left=2 dtype=bf16 acc=1 a_pitch=8 w_pitch=16\n"),
      std::string::npos)
      << text;
  EXPECT_EQ(read_program(text, "again.tprog"), program);
}

TEST(ReadProgramErrors, ConvNeedsEveryRequiredKey) {
  const std::vector<std::string> options = {"a=0x0", "w=0x100", "o=0x200", "e=2", "q=2",        "m=1",  "c=1",
                                            "ih=4",  "iw=4",    "r=3",     "s=3", "dtype=bf16", "acc=0"};
  for (size_t missing = 0; missing < options.size(); ++missing) {
    std::string line = "pe conv rs";
    for (size_t i = 0; i < options.size(); ++i)
      if (i != missing) line += " " + options[i];
    const InputError error = instruction_error(line);
    const std::string key = options[missing].substr(0, options[missing].find('=') + 1);
    EXPECT_EQ(error.message(), "conv is missing '" + key + "'");
    EXPECT_EQ(error.where().column, 4) << key;
    EXPECT_NE(error.hint().find("a conv is written"), std::string::npos);
  }
}

TEST(ReadProgramErrors, ConvNamesItsDataflowFirst) {
  const std::string line =
      "pe conv xs a=0x0 w=0x100 o=0x200 e=2 q=2 m=1 c=1 ih=4 iw=4 r=3 s=3 dtype=bf16 acc=0";
  const InputError error = instruction_error(line);
  EXPECT_EQ(error.message(), "unknown dataflow 'xs'; did you mean 'ws'?");
  EXPECT_EQ(error.where().column, column_of(line, "xs"));
  const InputError missing = instruction_error("pe conv");
  EXPECT_EQ(missing.where().column, 8);
}

// wt=1: W stored transposed (attention's S = Q K^T); the canonical form writes it last and only when set.
TEST(ReadProgram, AMatmulWithATransposedWRoundTrips) {
  const std::string line = "  pe os a=0x0 w=0x100 o=0x200 m=4 n=6 k=8 dtype=bf16 acc=0 w_pitch=32 wt=1";
  const Program program = read(kHeader + line + "\n");
  const auto& matmul = std::get<PeMatmul>(program.cores[0].instructions[0].operation);
  EXPECT_TRUE(matmul.w_transposed);
  EXPECT_EQ(matmul.w_rows(), 6);
  EXPECT_EQ(matmul.w_cols(), 8);
  EXPECT_NE(write_program(program).find(line + "\n"), std::string::npos);
  EXPECT_EQ(instruction_error("pe os a=0x0 w=0x100 o=0x200 m=4 n=6 k=8 dtype=bf16 acc=0 wt=2").message(),
            "wt must be 0 or 1, found 2");
}

}  // namespace
}  // namespace tessera::arch

namespace tessera::arch {
namespace {

// An activation's density (ops/density.hpp) travels with its tensor line, input or output; a dense tensor's
// line does not mention it; a density outside (0, 1] is an error at its value.
TEST(ReadProgram, TensorDensitiesReadAndWriteBack) {
  const std::string text =
      "tessera-program 1\nname t\nmesh 1x1\n"
      "tensor X bf16 64x64 at 0x0 input seed=1 id=0 density=0.45\n"
      "tensor W bf16 64x64 at 0x2000 input seed=1 id=1\n"
      "tensor O bf16 64x64 at 0x4000 output density=0.3\n";
  const Program program = read_program(text, "d.tprog");
  EXPECT_EQ(program.tensors.at(0).density, 0.45);
  EXPECT_EQ(program.tensors.at(1).density, 1.0);
  EXPECT_EQ(program.tensors.at(2).density, 0.3);
  const std::string written = write_program(program);
  EXPECT_NE(written.find("input seed=1 id=0 density=0.45\n"), std::string::npos) << written;
  EXPECT_NE(written.find("input seed=1 id=1\n"), std::string::npos) << written;
  EXPECT_NE(written.find("output density=0.3\n"), std::string::npos) << written;
  EXPECT_EQ(read_program(written, "d.tprog"), program);
  const std::string bad = "tensor O fp32 64x64 at 0x2000 output density=1.25";
  try {
    read_program("tessera-program 1\nname t\nmesh 1x1\n" + bad + "\n", "d.tprog");
    ADD_FAILURE() << "a density of 1.25 was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.message(), "a density is a fraction of non-zero values in (0, 1], not 1.25");
    EXPECT_EQ(error.where().line, 4);
    EXPECT_EQ(error.where().column, static_cast<int>(bad.find("1.25")) + 1);
  }
}

}  // namespace
}  // namespace tessera::arch
