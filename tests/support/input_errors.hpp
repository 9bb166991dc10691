// What the reader tests share: the InputError a body throws, and a text with one of its lines changed.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"

namespace tessera::testing_support {

// The InputError that `body` throws; fails the test if it throws none.
template <class Body>
InputError input_error_of(Body body) {
  try {
    body();
  } catch (const InputError& error) {
    return error;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError(SourceLocation{}, "", "no error");
}

// `text` with `from` replaced by `to`; `from` must occur exactly once.
inline std::string replaced_once(const std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
  std::string changed = text;
  return at == std::string::npos ? changed : changed.replace(at, from.size(), to);
}

}  // namespace tessera::testing_support
