// An instruction kind kept out of line (DESIGN.md, "arch/isa"): a value held on the heap, so that the kinds
// with many fields (a vector op, a conv) do not widen every instruction. Programs are millions of loads,
// stores and matmuls (a MoE layer's: 10 M and more), whose instructions were 336 bytes for a 224-byte vector
// op. Copies copy the value; comparison compares it. A moved-from Boxed holds nothing (as a moved-from vector
// holds nothing): it copies and compares as empty, and is otherwise only destroyed or assigned.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace tessera::arch {

template <class T>
class Boxed {
 public:
  Boxed() : value_(std::make_unique<T>()) {}
  Boxed(T value) : value_(std::make_unique<T>(std::move(value))) {}  // NOLINT: implicit, as the kind itself
  Boxed(const Boxed& other) : value_(copy_of(other)) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = copy_of(other);
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;

  const T& operator*() const { return *value_; }
  T& operator*() { return *value_; }
  const T* operator->() const { return value_.get(); }
  T* operator->() { return value_.get(); }
  bool operator==(const Boxed& other) const {
    return value_ && other.value_ ? *value_ == *other.value_ : value_ == other.value_;
  }

 private:
  static std::unique_ptr<T> copy_of(const Boxed& other) {
    return other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
  }
  std::unique_ptr<T> value_;
};

// A kind as the instruction table holds it, and the kind itself.
template <class T>
const T& unboxed(const T& kind) {
  return kind;
}
template <class T>
const T& unboxed(const Boxed<T>& kind) {
  return *kind;
}
template <class T>
using Unboxed = std::decay_t<decltype(unboxed(std::declval<const T&>()))>;

}  // namespace tessera::arch
