// The tables of arch/isa (docs/extending.md, "A tensor view"): every kind of the views table and the fills
// table reads back from its text and its binary form equal to itself, and its comparison and binary form see
// each field of its field list; every instruction kind with a field list is compared and sent by all of it.
// The tests walk the tables, so a new view, fill or instruction kind is covered when it is added (a view or
// fill needs a sample below, which the test does not compile without).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/isa/program_binary.hpp"
#include "arch/isa/program_text.hpp"

namespace tessera::arch {
namespace {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// A value unequal to `value`: each number one more, a flag flipped, an enum another value, an absent optional
// present, a sequence one element longer, a value with a field list its first field changed.
template <class T>
void change(T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    value = !value;
  } else if constexpr (std::is_enum_v<T>) {
    value = static_cast<T>(static_cast<std::underlying_type_t<T>>(value) == 0 ? 1 : 0);
  } else if constexpr (std::is_arithmetic_v<T>) {
    value = static_cast<T>(value + 1);
  } else if constexpr (IsOptional<T>::value) {
    if (value)
      change(*value);
    else
      value.emplace();
  } else if constexpr (HasFields<T>::value) {
    bool changed = false;
    T::fields([&](const char*, auto member, auto&&...) {
      if (!changed) change(value.*member), changed = true;
    });
  } else {
    value.push_back(typename T::value_type{});
  }
}

// A tensor of `kind` and the tensors it needs before it: a view's source, or nothing for a filled input.
std::vector<TensorDecl> sample(KindTag<Im2colView>) {
  const TensorDecl source{"X", DType::bf16, 2 * 7 * 7, 32, 0x0, TensorRole::input, 7, 1};
  const Im2colView view{0, 2, 7, 7, 32, 3, 3, 2, 1, 2, 4};
  TensorDecl tensor{"A", DType::bf16, view.rows(), view.cols(), 0, TensorRole::view};
  tensor.view = view;
  return {source, tensor};
}
std::vector<TensorDecl> sample(KindTag<BlockDiagonalView>) {
  const TensorDecl source{"W", DType::bf16, 4 * 9 * 8, 8, 0x0, TensorRole::input, 7, 1};
  const BlockDiagonalView view{0, 4, 2, 9, 8, 8};
  TensorDecl tensor{"Wb", DType::bf16, view.rows(), view.cols(), 0, TensorRole::view};
  tensor.view = view;
  return {source, tensor};
}
std::vector<TensorDecl> sample(KindTag<RowGatherView>) {
  const TensorDecl source{"X", DType::fp32, 64, 32, 0x0, TensorRole::input, 7, 1};
  TensorDecl tensor{"G", DType::fp32, 5, 32, 0, TensorRole::view};
  tensor.view = RowGatherView{0, {4, RowGatherView::kZeroRow, 0, 63, 4}};
  return {source, tensor};
}
std::vector<TensorDecl> sample(KindTag<RopeTableFill>) {
  TensorDecl tensor{"T", DType::fp32, 4, 64, 0x0, TensorRole::input, 7, 4};
  tensor.fill = RopeTableFill{8191, 500000.5};
  return {tensor};
}
std::vector<TensorDecl> sample(KindTag<ValuesFill>) {
  TensorDecl tensor{"R", DType::int32, 2, 3, 0x0, TensorRole::input, 9, 5};
  tensor.fill = ValuesFill{{0, -5, 7, 2147483647, -2147483648LL, 3}};
  return {tensor};
}

Program program_of(std::vector<TensorDecl> tensors) {
  Program program;
  program.name = "table";
  program.mesh = MeshSpec{1, 1};
  program.tensors = std::move(tensors);
  return program;
}

// The kind held by the program's last tensor (its view, or its fill).
template <class Kind, class AnyProgram>
auto& kind_of(AnyProgram& program) {
  auto& tensor = program.tensors.back();
  if constexpr (std::is_constructible_v<View, Kind>)
    return *tensor.template view_if<Kind>();
  else
    return *tensor.template fill_if<Kind>();
}

template <class Table>
void expect_each_kind_round_trips_and_compares_every_field() {
  for_each_kind<Table>([](auto tag) {
    using Kind = typename decltype(tag)::type;
    const Program original = program_of(sample(tag));
    const std::string text = write_program(original);
    SCOPED_TRACE(text);
    EXPECT_NE(text.find(Kind::kKeyword), std::string::npos);
    EXPECT_TRUE(read_program(text, "table.tprog") == original);
    EXPECT_TRUE(read_program_binary(write_program_binary(original)) == original);
    int fields = 0;
    Kind::fields([&](const char* name, auto member, auto&&...) {
      SCOPED_TRACE(name);
      Program changed = original;
      change(kind_of<Kind>(changed).*member);
      EXPECT_FALSE(changed == original);
      EXPECT_FALSE(kind_of<Kind>(changed) == kind_of<Kind>(original));
      const Program sent = read_program_binary(write_program_binary(changed));
      EXPECT_TRUE(sent == changed);
      ++fields;
    });
    EXPECT_GT(fields, 0);
  });
}

TEST(ViewsTable, EveryViewReadsBackFromTextAndBinaryAndComparesEveryField) {
  expect_each_kind_round_trips_and_compares_every_field<View>();
}

TEST(ViewsTable, EveryFillReadsBackFromTextAndBinaryAndComparesEveryField) {
  expect_each_kind_round_trips_and_compares_every_field<Fill>();
}

// Every flag of a value with a field list set: a field that matters only under a flag (a send's accumulate
// dtype, compared only when it accumulates) is then compared.
template <class Kind>
Kind with_flags_set() {
  Kind kind;
  Kind::fields([&](const char*, auto member, auto&&...) {
    if constexpr (std::is_same_v<std::decay_t<decltype(kind.*member)>, bool>) kind.*member = true;
  });
  return kind;
}

// An instruction kind's comparison and binary form are its field list's: changing any field makes the
// instructions differ, and the binary form carries the change.
TEST(InstructionTable, EveryKindComparesAndSendsEveryListedField) {
  int kinds = 0;
  for_each_kind<Operation>([&](auto tag) {
    using Held = typename decltype(tag)::type;
    using Kind = Unboxed<Held>;
    if constexpr (HasFields<Kind>::value) {
      ++kinds;
      Program original = program_of({});
      original.cores.push_back(
          CoreProgram{Coord{0, 0}, {Instruction{QueueId{Kind::kQueue, 0}, Held{with_flags_set<Kind>()}}}});
      Kind::fields([&](const char* name, auto member, auto&&...) {
        SCOPED_TRACE(name);
        Program changed = original;
        Kind& kind = operation_as<Kind>(changed.cores[0].instructions[0].operation);
        change(kind.*member);
        EXPECT_FALSE(kind == operation_as<Kind>(original.cores[0].instructions[0].operation));
        EXPECT_FALSE(changed == original);
        EXPECT_TRUE(read_program_binary(write_program_binary(changed)) == changed);
      });
    }
  });
  EXPECT_GE(kinds, 1);
}

}  // namespace
}  // namespace tessera::arch
