// Typed errors shared by every stage (STYLE.md, "Errors"): a user's mistake is an InputError that carries
// where it happened and what was expected; a broken invariant of ours is an InternalError raised by
// TESSERA_ASSERT. Library code throws; only cli/ prints and picks the exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

// A place in an input: a file (or a pseudo-file such as "--set core.sram.kib=64"), 1-based line and column.
// line == 0 means the position inside the file is unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  std::string str() const;  // "file:line:col", "file:line" or "file"
};

// A mistake in something the user gave us: a config, a workload, a tile program, a command-line value.
// `field` is the dotted path of the offending field ("core.sram.banks") or the instruction ("core 0 1 pe
// #3").
class InputError : public std::runtime_error {
 public:
  InputError(SourceLocation where, std::string field, std::string message, std::string hint = "");

  const SourceLocation& where() const { return where_; }
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }

 private:
  SourceLocation where_;
  std::string field_;
  std::string message_;
  std::string hint_;
};

// A broken invariant inside tessera: never the user's fault, always a bug to report.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

[[noreturn]] void fail_invariant(const char* invariant, const char* file, int line);

}  // namespace tessera

// Checks an invariant of tessera's own making; names it when it breaks.
#define TESSERA_ASSERT(cond, invariant)                                    \
  do {                                                                     \
    if (!(cond)) ::tessera::fail_invariant(invariant, __FILE__, __LINE__); \
  } while (0)
