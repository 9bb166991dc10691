// A mapped form's own choices in a mapping (DESIGN.md, "Mapped forms"): a value of the form's own struct
// (attention's q block rows, k/v tile, cores and form; an MoE placement's tiles), held by value in
// Mapping::choice, compared as a whole and read back by the type the form stored. It replaces an untyped
// array of integers whose meaning each reader had to know by index.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include "common/error.hpp"

namespace tessera::mapper {

class FormChoice {
 public:
  FormChoice() = default;
  template <class T, class = std::enable_if_t<!std::is_same_v<std::decay_t<T>, FormChoice>>>
  FormChoice(T value) : held_(std::make_shared<const Held<std::decay_t<T>>>(std::move(value))) {}  // NOLINT

  bool empty() const { return !held_; }
  // The choice as the form stored it; reading it as another type is a broken invariant of the form's.
  template <class T>
  const T& as() const {
    const auto* held = dynamic_cast<const Held<T>*>(held_.get());
    TESSERA_ASSERT(held != nullptr, "a mapping's form choice is read as the type its form stored");
    return held->value;
  }
  bool operator==(const FormChoice& other) const {
    if (!held_ || !other.held_) return !held_ && !other.held_;
    return held_->equals(*other.held_);
  }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual bool equals(const Base& other) const = 0;
  };
  template <class T>
  struct Held final : Base {
    explicit Held(T held_value) : value(std::move(held_value)) {}
    bool equals(const Base& other) const override {
      const auto* same = dynamic_cast<const Held*>(&other);
      return same != nullptr && same->value == value;
    }
    T value;
  };
  std::shared_ptr<const Base> held_;  // immutable: copies share it
};

}  // namespace tessera::mapper
