#include "arch/isa/instruction_table.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace tessera::arch {

namespace {

// Calls visit(Kind{}) for each kind of the table, in order, until it returns true.
template <size_t I = 0, class Visit>
bool for_each_kind(Visit&& visit) {
  if constexpr (I < std::variant_size_v<Operation>) {
    if (visit(Unboxed<std::variant_alternative_t<I, Operation>>{})) return true;
    return for_each_kind<I + 1>(visit);
  }
  return false;
}

}  // namespace

QueueKind queue_of(const Operation& operation) {
  return std::visit([](const auto& kind) { return Unboxed<std::decay_t<decltype(kind)>>::kQueue; },
                    operation);
}

Cause waiters_cause(const Operation& operation) {
  return std::visit([](const auto& kind) { return Unboxed<std::decay_t<decltype(kind)>>::kWaitersCause; },
                    operation);
}

const std::vector<std::string>& mnemonics_of(QueueKind queue) {
  static const std::vector<std::vector<std::string>> per_queue = [] {
    std::vector<std::vector<std::string>> lists(all_queue_kinds().size());
    for_each_kind([&](const auto& kind) {
      using Kind = std::decay_t<decltype(kind)>;
      auto& list = lists[static_cast<size_t>(Kind::kQueue)];
      list.insert(list.end(), Kind::mnemonics().begin(), Kind::mnemonics().end());
      return false;
    });
    return lists;
  }();
  return per_queue[static_cast<size_t>(queue)];
}

const std::vector<int>& signal_destinations_of(const Operation& operation) {
  return std::visit(
      [](const auto& kind) -> const std::vector<int>& { return signal_destinations(unboxed(kind)); },
      operation);
}

Operation read_operation(LineReader& in, QueueKind queue, std::string_view mnemonic, int column) {
  Operation operation;
  const bool read = for_each_kind([&](const auto& kind) {
    using Kind = std::decay_t<decltype(kind)>;
    const std::vector<std::string>& names = Kind::mnemonics();
    if (Kind::kQueue != queue || std::find(names.begin(), names.end(), mnemonic) == names.end()) return false;
    operation = Kind::read(in, mnemonic, column);
    return true;
  });
  TESSERA_ASSERT(read, "an operation word is checked against mnemonics_of(queue) before it is read");
  return operation;
}

void write_operation(LineWriter& out, const Operation& operation) {
  std::visit([&](const auto& kind) { unboxed(kind).write(out); }, operation);
}

void check_operation(const InstructionChecks& checks, const Operation& operation) {
  std::visit([&](const auto& kind) { unboxed(kind).check(checks); }, operation);
}

}  // namespace tessera::arch
