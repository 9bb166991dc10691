// Row-gather views and fill=values inputs (docs/tile-program.md, "Views", "Lists", "Limits"): what the reader
// makes of a list, the writer's canonical list, the round trip, every mistake with its exact message and
// column, the checker's rules for programs built in memory, and the run walker's rule (consecutive whole rows
// are one run).
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <tuple>
#include <vector>

#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "arch/isa/views.hpp"
#include "common/config.hpp"

namespace tessera::arch {
namespace {

// X is line 4; the line under test is line 6.
const std::string kHeader =
    "tessera-program 1\n"
    "name g\n"
    "mesh 1x1\n"
    "tensor X bf16 10x64 at 0x0 input seed=3 id=0\n"
    "tensor Y bf16 6x64 at 0x1000 output\n";
constexpr int kLineUnderTest = 6;

Program read(const std::string& text) {
  return read_program(text, "g.tprog");
}

// The error reading kHeader + `line`; checks that it is located on that line, in the tensor's field.
InputError line_error(const std::string& line) {
  try {
    read(kHeader + line + "\n");
  } catch (const InputError& error) {
    EXPECT_EQ(error.where().file, "g.tprog");
    EXPECT_EQ(error.where().line, kLineUnderTest) << line;
    EXPECT_EQ(error.field().rfind("tensor ", 0), 0u) << error.field();
    return error;
  }
  ADD_FAILURE() << "expected an InputError reading: " << line;
  return InputError(SourceLocation{}, "", "no error");
}

// Expects `line` to fail with `message` at the column of the last occurrence of `token` ("$": the end of
// the line).
void expect_error(const std::string& line, const std::string& token, const std::string& message) {
  const InputError error = line_error(line);
  EXPECT_EQ(error.message(), message) << line;
  const size_t position = token == "$" ? line.size() : line.rfind(token);
  ASSERT_NE(position, std::string::npos) << "'" << token << "' in '" << line << "'";
  EXPECT_EQ(error.where().column, static_cast<int>(position) + 1) << line << ": " << error.message();
}

// A program whose tensor G gathers `rows` of X.
Program gather_program(const std::vector<int64_t>& rows) {
  Program program = read(kHeader);
  TensorDecl view;
  view.name = "G";
  view.dtype = DType::bf16;
  view.rows = static_cast<int64_t>(rows.size());
  view.cols = 64;
  view.role = TensorRole::view;
  view.view = RowGatherView{0, rows};
  program.tensors.push_back(view);
  return program;
}

ArchSpec machine() {
  const std::string text =
      "name: m\nclock_ghz: 1.0\nmesh: {rows: 1, cols: 1}\nnoc: {link_bytes_per_cycle: 64}\n"
      "dram: {bandwidth_gbps: 256, channels: 4, latency_cycles: 100}\ncore:\n  pe_array: {rows: 8, cols: 8}\n"
      "  sram: {kib: 64, banks: 4, bank_width_bytes: 32}\n  dma: {engines: 1, bytes_per_cycle: 32, "
      "setup_cycles: 8}\n";
  return arch_from_yaml(config::load_text(text, "m.yaml"));
}

std::string check_error(const Program& program) {
  try {
    check_program(program, machine());
  } catch (const InputError& error) {
    return error.message();
  }
  return "no error";
}

}  // namespace

// ---- reading and writing

TEST(RowGatherText, ReadsTheListInOrderWithRangesRepeatsAndZeroRows) {
  const Program program = read(kHeader + "tensor G bf16 9x64 view gather X rows=3,0-2,-1,5*2,9, 4\n");
  const TensorDecl& view = program.tensors.at(2);
  EXPECT_EQ(view.role, TensorRole::view);
  EXPECT_EQ(view.rows, 9);
  EXPECT_EQ(view.cols, 64);
  ASSERT_TRUE(view.view_if<RowGatherView>());
  EXPECT_EQ(view.view_if<RowGatherView>()->source, 0);
  EXPECT_EQ(view.view_if<RowGatherView>()->rows, (std::vector<int64_t>{3, 0, 1, 2, -1, 5, 5, 9, 4}));
  EXPECT_EQ(view.view_source(), 0);
  EXPECT_EQ(view.size_in_bytes(), 0);
}

TEST(RowGatherText, TheSourceMayBeAnOutputWrittenByTheProgram) {
  const Program program = read(kHeader + "tensor G bf16 2x64 view gather Y rows=5,0\n");
  EXPECT_EQ(program.tensors.at(2).view_source(), 1);
  EXPECT_EQ(check_error(program), "no error");
}

// The canonical rule: three or more consecutive ascending non-negative values are a-b, three or more equal
// values v*N, anything else value by value; each form reads back as the same list.
TEST(RowGatherText, WritesTheCanonicalListAndReadsItBack) {
  const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
      {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "0-9"},
      {{4, 5}, "4,5"},
      {{4, 5, 6}, "4-6"},
      {{-1, -1}, "-1,-1"},
      {{-1, -1, -1, -1}, "-1*4"},
      {{3, 0, 1, 2, -1, 5, 5, 9, 4}, "3,0-2,-1,5,5,9,4"},
      {{0, 1, 2, 2, 2, 2}, "0-2,2*3"},
      {{9, 8, 7, 6}, "9,8,7,6"},
      {{7, 7, 7, 8, 9}, "7*3,8,9"},  // the range is tried first, from where an item starts
      {{2, 3, 4, 4, 5, 6}, "2-4,4-6"},
      {{0}, "0"},
  };
  for (const auto& [rows, list] : cases) {
    const Program program = gather_program(rows);
    const std::string text = write_program(program);
    const std::string expected =
        "tensor G bf16 " + std::to_string(rows.size()) + "x64 view gather X rows=" + list;
    EXPECT_NE(text.find(expected + "\n"), std::string::npos) << text;
    EXPECT_EQ(read(text), program) << list;
    EXPECT_EQ(write_program(read(text)), text);
  }
}

TEST(RowGatherText, HandWrittenListsReadLikeTheirCanonicalForm) {
  // Blanks around commas, a two-value range, a repeat of one, hexadecimal.
  const Program hand = read(kHeader + "tensor G bf16 6x64 view gather X rows=3-4 , -1*1,0x2,7,8\n");
  EXPECT_EQ(hand.tensors.at(2).view_if<RowGatherView>()->rows, (std::vector<int64_t>{3, 4, -1, 2, 7, 8}));
  EXPECT_EQ(hand, read(kHeader + "tensor G bf16 6x64 view gather X rows=3,4,-1,2,7,8\n"));
}

TEST(ValuesFill, ReadsTheValuesRowByRowAndWritesThemBackCanonically) {
  const std::string line = "tensor R int32 4x2 at 0x2000 input seed=3 id=1 fill=values values=0-3,7*3,-5";
  const Program program = read(kHeader + line + "\n");
  const TensorDecl& table = program.tensors.at(2);
  EXPECT_EQ(table.role, TensorRole::input);
  ASSERT_TRUE(table.fill_if<ValuesFill>());
  EXPECT_EQ(table.fill_if<ValuesFill>()->values, (std::vector<int64_t>{0, 1, 2, 3, 7, 7, 7, -5}));
  EXPECT_EQ(table.seed, 3u);
  EXPECT_EQ(table.generator_id, 1u);
  const std::string text = write_program(program);
  EXPECT_NE(text.find(line + "\n"), std::string::npos) << text;
  EXPECT_EQ(read(text), program);
  // Options in any order; the extremes of int32 and int8.
  const Program extremes =
      read(kHeader +
           "tensor R int32 1x3 at 0x2000 input fill=values id=1 values=-2147483648,"
           "2147483647,0 seed=3\n"
           "tensor S int8 1x4 at 0x3000 input seed=3 id=2 fill=values values=-128,127,-1*2\n");
  EXPECT_EQ(extremes.tensors.at(2).fill_if<ValuesFill>()->values,
            (std::vector<int64_t>{INT32_MIN, INT32_MAX, 0}));
  EXPECT_EQ(extremes.tensors.at(3).fill_if<ValuesFill>()->values, (std::vector<int64_t>{-128, 127, -1, -1}));
  EXPECT_EQ(read(write_program(extremes)), extremes);
  EXPECT_EQ(check_error(extremes), "no error");
}

// ---- reader errors, each with its message and the column it points at

TEST(RowGatherTextErrors, MalformedLists) {
  expect_error("tensor G bf16 2x64 view gather X rows=", "$", "expected a row, found the end of the line");
  expect_error("tensor G bf16 2x64 view gather X rows=1,x", "x", "malformed number 'x' for a row");
  expect_error("tensor G bf16 2x64 view gather X rows=1,", "$", "expected a row, found the end of the line");
  expect_error("tensor G bf16 2x64 view gather X rows=1,,2", ",2", "expected a row, found ',2'");
  expect_error("tensor G bf16 2x64 view gather X rows=1.5,2", "1.5", "malformed number '1.5' for a row");
  expect_error("tensor G bf16 4x64 view gather X rows=5-3,0", "5-3", "the range 5-3 does not ascend");
  expect_error("tensor G bf16 4x64 view gather X rows=3-3,0,1,2", "3-3", "the range 3-3 does not ascend");
  expect_error("tensor G bf16 4x64 view gather X rows=-1-2,0", "-2",
               "a range a-b starts at a non-negative value");
  expect_error("tensor G bf16 2x64 view gather X rows=-1*0,1", "0,1", "a repeat count is at least 1");
  expect_error("tensor G bf16 2x64 view gather X", "$", "a gather view is missing 'rows='");
}

TEST(RowGatherTextErrors, RowsOutsideTheSource) {
  expect_error("tensor G bf16 2x64 view gather X rows=0,10", "10", "row 10 is outside -1..9");
  expect_error("tensor G bf16 2x64 view gather X rows=-2,0", "-2", "row -2 is outside -1..9");
  expect_error("tensor G bf16 4x64 view gather X rows=8-10,0", "10", "row 10 is outside -1..9");
  const InputError error = line_error("tensor G bf16 2x64 view gather X rows=0,10");
  EXPECT_EQ(error.hint(), "rows of X are 0..9; -1 is a row of zeros");
}

TEST(RowGatherTextErrors, TheListGivesOneRowPerViewRow) {
  expect_error("tensor G bf16 4x64 view gather X rows=0,1,2", "0,1,2",
               "rows= lists 3 rows, but the tensor has 4");
  expect_error("tensor G bf16 4x64 view gather X rows=0,1,2,3,4", "4",
               "rows= lists more than the tensor's 4 rows");
  expect_error("tensor G bf16 4x64 view gather X rows=0,0-9", "0-9",
               "rows= lists more than the tensor's 4 rows");
  const InputError error = line_error("tensor G bf16 4x64 view gather X rows=0,1,2");
  EXPECT_EQ(error.hint(), "one source row (or -1) per row of the view");
}

// Numbers past int64 and counts past anything allocatable are errors at their item, before any allocation.
TEST(RowGatherTextErrors, OverflowAndHugeCountsAllocateNothing) {
  expect_error("tensor G bf16 4x64 view gather X rows=99999999999999999999", "99999999999999999999",
               "99999999999999999999 is too large for a row (at most 9223372036854775807)");
  expect_error("tensor G bf16 4x64 view gather X rows=-99999999999999999999", "99999999999999999999",
               "99999999999999999999 is too large for a row (at most 9223372036854775808)");
  expect_error("tensor G bf16 4x64 view gather X rows=-1*99999999999999999999", "99999999999999999999",
               "99999999999999999999 is too large for a repeat count (at most 18446744073709551615)");
  expect_error("tensor G bf16 4x64 view gather X rows=-1*18446744073709551615", "-1*",
               "rows= lists more than the tensor's 4 rows");
  expect_error("tensor G bf16 4x64 view gather X rows=1,-1*4", "-1*",
               "rows= lists more than the tensor's 4 rows");
  expect_error("tensor G bf16 67108865x64 view gather X rows=0", "67108865x64",
               "a gather view lists at most 67108864 rows, not 67108865");
}

TEST(RowGatherTextErrors, TheSourceIsAnInputOrOutputOfTheSameDtypeAndColumns) {
  expect_error("tensor G bf16 2x32 view gather X rows=0,1", "X",
               "the gather view has 32 columns, but its source X has 64");
  expect_error("tensor G fp32 2x64 view gather X rows=0,1", "X", "the view is fp32 but its source X is bf16");
  expect_error("tensor G bf16 2x64 view gather Z rows=0,1", "Z", "unknown tensor 'Z'; did you mean 'X'?");
  const InputError of_view = [] {
    try {
      read(kHeader + "tensor G bf16 2x64 view gather X rows=0,1\ntensor H bf16 1x64 view gather G rows=0\n");
    } catch (const InputError& error) {
      return error;
    }
    return InputError(SourceLocation{}, "", "no error");
  }();
  EXPECT_EQ(of_view.message(), "the gather view's source G is a view");
  EXPECT_EQ(of_view.where().line, 7);
  expect_error("tensor G bf16 2x64 view gahter X rows=0,1", "gahter",
               "unknown view kind 'gahter'; did you mean 'gather'?");
  expect_error("tensor G bf16 2x64 view gather X rows=0,1 rows=0,1", "rows", "duplicate 'rows'");
  expect_error("tensor G bf16 2x64 view gather X row=0,1",
               "row=", "unknown key 'row' for a gather view; did you mean 'rows'?");
}

TEST(ValuesFillErrors, EveryMistakeIsLocated) {
  const std::string input = "tensor R int32 2x2 at 0x2000 input seed=3 id=1 ";
  expect_error(input + "fill=values values=0,1,2", "0,1,2", "values= lists 3 elements, but the tensor has 4");
  expect_error(input + "fill=values values=0-4", "0-4", "values= lists more than the tensor's 4 elements");
  expect_error(input + "fill=values values=0-2000000000", "0-2000000000",
               "values= lists more than the tensor's 4 elements");
  expect_error(input + "fill=values values=0,1,2,2147483648", "2147483648",
               "value 2147483648 is outside -2147483648..2147483647");
  expect_error(input + "fill=values values=0,1,2,-2147483649", "-2147483649",
               "value -2147483649 is outside -2147483648..2147483647");
  expect_error(input + "fill=values values=0,1,2,9223372036854775808", "9223372036854775808",
               "9223372036854775808 is too large for a value (at most 9223372036854775807)");
  expect_error(input + "fill=values values=0,x,2,3", "x", "malformed number 'x' for a value");
  expect_error(input + "fill=values", "input", "a fill=values input is missing 'values='");
  expect_error(input + "values=0-3", "values=", "values= lists the elements of a fill=values input");
  expect_error(input + "fill=valus values=0-3", "valus", "unknown fill 'valus'; did you mean 'values'?");
  expect_error(input + "fill=values values=0-3 position=2", "input",
               "position= and base= describe a fill=rope_table input");
  expect_error("tensor R int8 1x2 at 0x2000 input seed=3 id=1 fill=values values=-129,0", "-129",
               "value -129 is outside -128..127");
  expect_error("tensor R fp32 1x2 at 0x2000 input seed=3 id=1 fill=values values=0,1",
               "values=", "values= fills int8 and int32 inputs; tensor R is fp32");
  expect_error("tensor R int32 8192x8193 at 0x2000 input seed=3 id=1 fill=values values=0",
               "values=", "a fill=values input holds at most 67108864 elements; R is 8192x8193");
  expect_error("tensor R int32 2x2 at 0x2000 input fill=values values=0-3 id=1", "input",
               "an input tensor is missing 'seed='");
}

// ---- the checker, for programs built in memory

TEST(RowGatherCheck, RefusesWhatTheReaderWouldRefuse) {
  EXPECT_EQ(check_error(gather_program({0, 9, -1})), "no error");
  EXPECT_EQ(check_error(gather_program({0, 10})), "view row 1 is source row 10, outside -1..9 (source X)");
  EXPECT_EQ(check_error(gather_program({-2})), "view row 0 is source row -2, outside -1..9 (source X)");
  Program short_list = gather_program({0, 1});
  short_list.tensors.back().rows = 3;
  EXPECT_EQ(
      check_error(short_list),
      "the gather view (2 rows listed) does not fit its source X or its 3x64 shape (at most 67108864 rows)");
  Program later_source = gather_program({0});
  later_source.tensors.back().view_if<RowGatherView>()->source = 2;  // itself
  EXPECT_EQ(check_error(later_source),
            "the gather view's source is not an input or output declared before it");
  Program no_view = gather_program({0});
  no_view.tensors.back().view.reset();
  EXPECT_EQ(check_error(no_view), "a view tensor without its view");
  Program viewed_input = gather_program({0});
  viewed_input.tensors.front().view = RowGatherView{};
  EXPECT_EQ(check_error(viewed_input), "only a view tensor carries a view");
}

TEST(RowGatherCheck, AStoreIntoAGatherViewIsRefused) {
  const Program program = read(
      kHeader + "tensor G bf16 2x64 view gather X rows=0,1\ncore 0,0\n  dma0 store 0x0 -> G[0:2, 0:64]\n");
  EXPECT_EQ(check_error(program), "stores into tensor G, which is not an output");
}

TEST(ValuesFillCheck, IntegerInputsListTheirValues) {
  Program program = read(kHeader + "tensor R int32 2x2 at 0x2000 input seed=3 id=1 fill=values values=0-3\n");
  EXPECT_EQ(check_error(program), "no error");
  TensorDecl& table = program.tensors.back();
  table.fill_if<ValuesFill>()->values.push_back(4);
  EXPECT_EQ(check_error(program), "lists 5 values for a 2x2 tensor (at most 67108864)");
  table.fill = ValuesFill{{0, 1, 2, int64_t{1} << 31}};
  EXPECT_EQ(check_error(program), "value 2147483648 (element 3) does not fit int32");
  table.fill.reset();
  EXPECT_EQ(check_error(program), "generated input tensors are fp32, bf16, fp16 or int8");
  table.fill = ValuesFill{{0, 1, 2, 3}};
  table.dtype = DType::fp32;
  EXPECT_EQ(check_error(program), "fill=values fills int8 and int32 inputs, not fp32");
}

// ---- the run walker

using GatherRun =
    std::tuple<int64_t, int64_t, int64_t, int64_t>;  // first row, rows, source element, elements

std::vector<GatherRun> runs_of(const RowGatherView& view, int64_t cols, int64_t row, int64_t rows,
                               int64_t col, int64_t width) {
  std::vector<GatherRun> runs;
  for_each_row_gather_region_run(view, cols, row, rows, col, width,
                                 [&](int64_t first, int64_t count, int64_t source, int64_t elements) {
                                   runs.emplace_back(first, count, source, elements);
                                 });
  return runs;
}

TEST(RowGatherRuns, ConsecutiveWholeRowsAreOneRunAndZerosCostNothing) {
  const RowGatherView view{0, {3, 4, 5, -1, -1, 7, 6, 6, 0}};
  // Whole rows of 16 columns: 3..5 one run, the two zero rows one, then 7, 6, 6 (a repeat is not
  // consecutive) and 0 each alone.
  EXPECT_EQ(
      runs_of(view, 16, 0, 9, 0, 16),
      (std::vector<GatherRun>{
          {0, 3, 48, 48}, {3, 2, -1, 32}, {5, 1, 112, 16}, {6, 1, 96, 16}, {7, 1, 96, 16}, {8, 1, 0, 16}}));
  // A region starting inside the view: rows 4, 5, then the zeros.
  EXPECT_EQ(runs_of(view, 16, 1, 4, 0, 16), (std::vector<GatherRun>{{0, 2, 64, 32}, {2, 2, -1, 32}}));
  // Part of each row: a run per row, even where the source rows are consecutive.
  EXPECT_EQ(runs_of(view, 16, 0, 4, 4, 8),
            (std::vector<GatherRun>{{0, 1, 52, 8}, {1, 1, 68, 8}, {2, 1, 84, 8}, {3, 1, -1, 8}}));
  const RowGatherTraffic whole = row_gather_traffic(view, 16, 0, 9, 0, 16);
  EXPECT_EQ(whole.runs, 5);
  EXPECT_EQ(whole.elements, 7 * 16);
  const RowGatherTraffic part = row_gather_traffic(view, 16, 0, 4, 4, 8);
  EXPECT_EQ(part.runs, 3);
  EXPECT_EQ(part.elements, 3 * 8);
}

}  // namespace tessera::arch
