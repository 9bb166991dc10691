#include "common/error.hpp"

#include <fmt/format.h>

namespace tessera {

std::string SourceLocation::str() const {
  if (line > 0 && column > 0) return fmt::format("{}:{}:{}", file, line, column);
  if (line > 0) return fmt::format("{}:{}", file, line);
  return file;
}

namespace {
std::string compose(const SourceLocation& where, const std::string& field, const std::string& message,
                    const std::string& hint) {
  std::string text = where.file.empty() ? std::string() : where.str() + ": ";
  if (!field.empty()) text += field + ": ";
  text += message;
  if (!hint.empty()) text += "\n  hint: " + hint;
  return text;
}
}  // namespace

InputError::InputError(SourceLocation where, std::string field, std::string message, std::string hint)
    : std::runtime_error(compose(where, field, message, hint)),
      where_(std::move(where)),
      field_(std::move(field)),
      message_(std::move(message)),
      hint_(std::move(hint)) {}

void fail_invariant(const char* invariant, const char* file, int line) {
  throw InternalError(fmt::format("internal error: invariant '{}' broken at {}:{}", invariant, file, line));
}

}  // namespace tessera
