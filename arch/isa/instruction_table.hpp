// The instruction set (DESIGN.md, "arch/isa"): every instruction kind of the tile program, one line each in
// the Operation variant below. Each kind's file says its fields, its text (mnemonics, reader, writer), its
// checks, the queue it runs on and the bubble cause its waiters are charged; everything else — the queue
// rule, the dispatch of the reader, writer and checker, the simulator's signal causes — is derived from this
// list. A new instruction kind is its file and a line here; the simulator's unit for its queue implements it.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "arch/isa/boxed.hpp"
#include "arch/isa/cause.hpp"
#include "arch/isa/dma_load.hpp"
#include "arch/isa/dma_store.hpp"
#include "arch/isa/noc_send.hpp"
#include "arch/isa/pe_conv.hpp"
#include "arch/isa/pe_matmul.hpp"
#include "arch/isa/pe_post.hpp"
#include "arch/isa/queue.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vec_rope.hpp"
#include "arch/isa/vec_route.hpp"
#include "common/error.hpp"

namespace tessera::arch {

// A kind wider than the loads, stores and matmuls that make up most of a program is kept out of line
// (Boxed): every Instruction is as wide as the widest kind held in it.
using Operation = std::variant<  // the instruction table
    DmaLoad,                     //
    DmaStore,                    //
    PeMatmul,                    //
    Boxed<PeConv>,               //
    PePost,                      //
    NocSend,                     //
    Boxed<VecOp>,                //
    Boxed<VecRope>,              //
    Boxed<VecRoute>>;

// The operation as kind T (held in the instruction or out of line), or null when it is another kind.
template <class T, class Variant>
struct HeldIn;
template <class T, class... Kinds>
struct HeldIn<T, std::variant<Kinds...>> : std::bool_constant<(std::is_same_v<T, Kinds> || ...)> {};
template <class T>
const T* operation_if(const Operation& operation) {
  if constexpr (HeldIn<T, Operation>::value) {
    return std::get_if<T>(&operation);
  } else {
    const auto* boxed = std::get_if<Boxed<T>>(&operation);
    return boxed ? &**boxed : nullptr;
  }
}
template <class T>
T* operation_if(Operation& operation) {
  return const_cast<T*>(operation_if<T>(static_cast<const Operation&>(operation)));
}
// The operation as kind T, which it is.
template <class T>
const T& operation_as(const Operation& operation) {
  const T* kind = operation_if<T>(operation);
  TESSERA_ASSERT(kind, "an operation is read as its own kind");
  return *kind;
}
template <class T>
T& operation_as(Operation& operation) {
  return const_cast<T&>(operation_as<T>(static_cast<const Operation&>(operation)));
}

// The queue an operation runs on: the one rule of which instruction goes where.
QueueKind queue_of(const Operation& operation);
// What a unit waiting on the operation's signal is charged.
Cause waiters_cause(const Operation& operation);
// The operation words of the kinds that run on `kind`, in table order ("load", "store"; "ws", ..., "conv").
const std::vector<std::string>& mnemonics_of(QueueKind kind);

// The cores that receive a same-core signal of an operation issued by core `issuer`: the issuer, or every
// destination of a multicast (an operation kind says so with an overload of signal_destinations).
template <class Kind>
const std::vector<int>& signal_destinations(const Kind&) {
  static const std::vector<int> none;
  return none;
}
const std::vector<int>& signal_destinations_of(const Operation& operation);
template <class Target>
void for_each_same_core_signal_target(const Operation& operation, int issuer, Target&& target) {
  const std::vector<int>& destinations = signal_destinations_of(operation);
  if (destinations.empty()) {
    target(issuer);
    return;
  }
  for (int destination : destinations) target(destination);
}

class LineReader;
class LineWriter;
class InstructionChecks;
// The operation of the kind that runs on `queue` and is written `mnemonic` (which must be one of
// mnemonics_of(queue)), read from the rest of the line.
Operation read_operation(LineReader& in, QueueKind queue, std::string_view mnemonic, int column);
void write_operation(LineWriter& out, const Operation& operation);
void check_operation(const InstructionChecks& checks, const Operation& operation);

}  // namespace tessera::arch
