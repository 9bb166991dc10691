// The reader's view of one line of a tile program's text (docs/tile-program.md): a cursor with the scanning
// and value readers every line kind uses (the header's, and each instruction kind's operation), and errors
// that name file:line:column and what the line is about. The reader scans with a hand-written cursor rather
// than a regex per line: programs run to hundreds of thousands of lines, and every error must name the
// column of the token it is about. Blanks may stand between any two tokens (`A[ 0:128 , 0:64 ]` reads like
// `A[0:128, 0:64]`).
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arch/isa/integer_list.hpp"
#include "arch/isa/program.hpp"
#include "arch/isa/syntax.hpp"

namespace tessera::arch {

// The largest size, count, pitch or index a tile program's text may state (2^40): far past any SRAM or
// tensor, small enough that the checks' arithmetic on it cannot overflow.
constexpr int64_t kMaxProgramSize = int64_t{1} << 40;

// Every dtype name, accumulators included (an instruction's dtype= is checked against the machine later).
const std::vector<std::string>& all_dtype_names();
// The types a PE instruction's `psum=` may name (bf16, fp16).
const std::vector<std::string>& partial_sum_dtype_names();

class LineReader {
 public:
  virtual ~LineReader() = default;
  const Program& program() const { return program_; }

  TensorRegion read_region();

  // `begin:end` -> (begin, end - begin)
  std::pair<int64_t, int64_t> read_range(std::string_view dimension);

  void fail_unknown_tensor(int column, std::string_view name);

  Coord read_coord();

  int read_core_index() { return core_index(read_coord(), program_.mesh); }

  // `<rows>x<cols>`, both positive. Decimal only: in "0x10" the 'x' would be a hexadecimal prefix as much
  // as the separator.
  std::pair<uint64_t, uint64_t> read_shape(std::string_view what);

  DType read_dtype(std::string_view what, const std::vector<std::string>& allowed);

  std::string_view read_name(std::string_view what, const char* hint = "");

  uint64_t read_unsigned(std::string_view what, uint64_t maximum = UINT64_MAX);

  // A size, count, pitch or index: at most kMaxProgramSize, so that products of two of them with an element
  // size cannot overflow the 64-bit arithmetic that checks them.
  int64_t read_size(std::string_view what) {
    return static_cast<int64_t>(read_unsigned(what, static_cast<uint64_t>(kMaxProgramSize)));
  }

  int64_t read_positive(std::string_view what);

  // A decimal integer, possibly negative.
  int64_t read_signed(std::string_view what);

  // A finite decimal number (1e-05, 0.125).
  double read_real(std::string_view what);

  // Names from `allowed` joined by '+' (fn=bias+gelu), or one name.
  // Names of `allowed` joined by '+'; an unknown one fails with `hint` (by default: where the options are
  // listed).
  std::vector<std::string> read_name_list(std::string_view what, const std::vector<std::string>& allowed,
                                          std::string hint =
                                              "docs/tile-program.md lists each instruction's "
                                              "options and their values");

  // Comma-separated items, each `v`, `a-b` (a, a+1, ..., b; 0 <= a < b) or `v*N` (N copies of v), expanded.
  // Allocates no more than rule.count values, whatever the text says.
  std::vector<int64_t> read_integer_list(const IntegerListRule& rule);

  // acc=0|1 of a PE instruction: whether it accumulates into O.
  bool read_acc();
  // A 0|1 option `name`; `meaning` (what 1 does) is the hint of a wrong value.
  bool read_zero_or_one(const char* name, const char* meaning);

  // Reads the next option of an operation, `key=` (the '=' included) or one of the `flags` (a bit per key),
  // and returns its index in `keys`. Unknown and repeated options are errors; `given` has a bit per option
  // read so far.
  size_t read_option(const std::vector<std::string>& keys, uint32_t flags, uint32_t& given,
                     std::string_view operation, const char* syntax);

  void require_options(const std::vector<std::string>& keys, uint32_t given, uint32_t required, int column,
                       std::string_view operation, const char* syntax);

  void skip_blanks();

  // Of the next token.
  int column();

  bool at_line_end();

  bool at_operation_end() { return at_line_end() || line_[position_] == ';'; }

  bool next_is(char c);

  bool next_is_digit();

  bool accept(char c);

  bool accept_arrow();

  void expect(char c, std::string_view what, const char* hint);

  void expect_arrow(std::string_view what, const char* hint);

  void expect_line_end(std::string_view after, const char* hint = "");

  template <class Predicate>
  std::string_view scan_run(Predicate belongs) {
    skip_blanks();
    const size_t start = position_;
    while (position_ < line_.size() && belongs(line_[position_])) ++position_;
    return line_.substr(start, position_ - start);
  }

  std::string_view scan_word() { return scan_run(syntax::is_word_char); }

  std::string_view scan_free_text();

  // "expected <what>, found '<the text at column>'".
  [[noreturn]] void fail_expected(int column, std::string_view what, std::string hint = "");

  [[noreturn]] void fail(int column, std::string message, std::string hint = "") const;

  // InputError::field: "mesh", "tensor A", "core 0,1", "core 0,1 pe #3" (describe_instruction).
  std::string field() const;

 protected:
  explicit LineReader(const std::string& file_name) { program_.source_file = file_name; }
  void start_line(std::string_view line);

  Program program_;

  // The current line, without its comment, and the scan position in it.
  std::string_view line_;
  size_t position_ = 0;
  int line_number_ = 0;

  // What the current line is about, for InputError::field.
  std::string_view line_subject_;
  std::string_view tensor_name_;
  std::optional<Coord> core_line_coord_;
  bool in_instruction_ = false;
  std::optional<QueueId> queue_;
  int current_core_ = -1;  // index into program_.cores
};

}  // namespace tessera::arch
