#include "arch/isa/text_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <tuple>

#include "common/text.hpp"

namespace tessera::arch {

using namespace syntax;

namespace {

constexpr const char* kRegionSyntax = "a region is written T[r0:r1, c0:c1]";
constexpr const char* kCoordSyntax = "a core is written row,col, e.g. 0,1";

enum class ParsedNumber { ok, malformed, too_large };

ParsedNumber parse_digits(std::string_view digits, uint64_t base, uint64_t& value) {
  if (digits.empty()) return ParsedNumber::malformed;
  value = 0;
  for (char c : digits) {
    uint64_t digit = base;
    if (is_digit(c)) digit = static_cast<uint64_t>(c - '0');
    if (c >= 'a' && c <= 'f') digit = static_cast<uint64_t>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') digit = static_cast<uint64_t>(c - 'A' + 10);
    if (digit >= base) return ParsedNumber::malformed;
    if (value > (UINT64_MAX - digit) / base) return ParsedNumber::too_large;
    value = value * base + digit;
  }
  return ParsedNumber::ok;
}

ParsedNumber parse_integer(std::string_view text, uint64_t& value) {
  if (text.size() > 2 && text[0] == '0' && text[1] == 'x') return parse_digits(text.substr(2), 16, value);
  return parse_digits(text, 10, value);
}

}  // namespace

const std::vector<std::string>& partial_sum_dtype_names() {
  static const std::vector<std::string> names = {name_of(DType::bf16), name_of(DType::fp16)};
  return names;
}

const std::vector<std::string>& all_dtype_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (DType type : {DType::fp32, DType::bf16, DType::fp16, DType::int8, DType::int32})
      list.push_back(name_of(type));
    return list;
  }();
  return names;
}

void LineReader::start_line(std::string_view line) {
  ++line_number_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  line_ = line.substr(0, line.find('#'));
  position_ = 0;
  line_subject_ = "header";
  tensor_name_ = {};
  core_line_coord_.reset();
  queue_.reset();
  in_instruction_ = false;
}

TensorRegion LineReader::read_region() {
  TensorRegion region;
  const int name_column = column();
  const std::string_view name = read_name("a tensor name", kRegionSyntax);
  region.tensor = program_.tensor_id(std::string(name));
  if (region.tensor < 0) fail_unknown_tensor(name_column, name);
  expect('[', "'[' after the tensor name", kRegionSyntax);
  std::tie(region.row, region.rows) = read_range("row");
  expect(',', "',' between the row range and the column range", kRegionSyntax);
  std::tie(region.col, region.cols) = read_range("column");
  expect(']', "']' after the column range", kRegionSyntax);
  return region;
}

std::pair<int64_t, int64_t> LineReader::read_range(std::string_view dimension) {
  // The descriptions are formatted only for an error: a program has two ranges per region, one region per
  // transfer (most of the reader's time went to formatting them).
  const int begin_column = column();
  const bool rows = dimension == "row";
  const int64_t begin = read_size(rows ? "the first row of the region" : "the first column of the region");
  if (!accept(':'))
    expect(':', fmt::format("':' between the first {} and the end {}", dimension, dimension), kRegionSyntax);
  const int64_t end = read_size(rows ? "the end row of the region" : "the end column of the region");
  if (end <= begin)
    fail(begin_column,
         fmt::format("the {} range {}:{} is empty; the end must be greater than the start", dimension, begin,
                     end),
         fmt::format("{}s r0:r1 are r0 .. r1-1", dimension));
  return {begin, end - begin};
}

void LineReader::fail_unknown_tensor(int column, std::string_view name) {
  std::vector<std::string> declared;
  for (const TensorDecl& tensor : program_.tensors) declared.push_back(tensor.name);
  fail(column, fmt::format("unknown tensor '{}'{}", name, did_you_mean(std::string(name), declared)),
       declared.empty() ? "no tensors are declared; declare them with 'tensor' lines in the header"
                        : fmt::format("declared tensors: {}", fmt::join(declared, ", ")));
}

Coord LineReader::read_coord() {
  const int coord_column = column();
  Coord coord;
  coord.row = static_cast<int>(read_unsigned("a core row", INT_MAX));
  expect(',', "',' between the core's row and column", kCoordSyntax);
  coord.col = static_cast<int>(read_unsigned("a core column", INT_MAX));
  const MeshSpec& mesh = program_.mesh;
  if (coord.row >= mesh.rows || coord.col >= mesh.cols)
    fail(coord_column,
         fmt::format("core {},{} is outside the {}x{} mesh", coord.row, coord.col, mesh.rows, mesh.cols),
         fmt::format("rows are 0..{} and columns 0..{}", mesh.rows - 1, mesh.cols - 1));
  return coord;
}

std::pair<uint64_t, uint64_t> LineReader::read_shape(std::string_view what) {
  const int shape_column = column();
  const std::string_view word = scan_word();
  const size_t separator = word.find('x');
  uint64_t rows = 0;
  uint64_t cols = 0;
  if (separator == std::string_view::npos ||
      parse_digits(word.substr(0, separator), 10, rows) != ParsedNumber::ok ||
      parse_digits(word.substr(separator + 1), 10, cols) != ParsedNumber::ok)
    fail_expected(shape_column, fmt::format("{} as <rows>x<cols> in decimal", what));
  if (rows == 0 || cols == 0)
    fail(shape_column,
         fmt::format("{} {}x{} has a zero dimension; both must be at least 1", what, rows, cols));
  return {rows, cols};
}

DType LineReader::read_dtype(std::string_view what, const std::vector<std::string>& allowed) {
  const int dtype_column = column();
  const std::string_view word = scan_word();
  if (word.empty()) fail_expected(dtype_column, fmt::format("a {} ({})", what, join_alternatives(allowed)));
  const std::string name(word);
  if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
    fail(dtype_column, fmt::format("unknown {} '{}'{}", what, name, did_you_mean(name, allowed)),
         fmt::format("expected {}", join_alternatives(allowed)));
  return *parse_dtype(name);
}

std::string_view LineReader::read_name(std::string_view what, const char* hint) {
  const int name_column = column();
  const std::string_view name = scan_word();
  if (!is_name(name)) fail_expected(name_column, what, hint);
  return name;
}

uint64_t LineReader::read_unsigned(std::string_view what, uint64_t maximum) {
  const int number_column = column();
  const std::string_view text = scan_run(is_number_char);
  if (text.empty())
    fail_expected(number_column, what, next_is('-') ? "addresses and sizes are non-negative" : "");
  uint64_t value = 0;
  const ParsedNumber parsed = parse_integer(text, value);
  if (parsed == ParsedNumber::malformed)
    fail(number_column, fmt::format("malformed number '{}' for {}", text, what),
         "integers are decimal (128) or hexadecimal (0x80)");
  if (parsed == ParsedNumber::too_large || value > maximum)
    fail(number_column, fmt::format("{} is too large for {} (at most {})", text, what, maximum),
         maximum == static_cast<uint64_t>(kMaxProgramSize)
             ? "sizes, counts, pitches and indices in a tile program are at most 2^40"
             : "");
  return value;
}

int64_t LineReader::read_positive(std::string_view what) {
  const int number_column = column();
  const int64_t value = read_size(what);
  if (value == 0)
    fail(number_column, fmt::format("{} must be at least 1", what), "a count or a size: 1 or more");
  return value;
}

int64_t LineReader::read_signed(std::string_view what) {
  const bool negative = accept('-');
  const uint64_t magnitude = read_unsigned(what, negative ? uint64_t{INT64_MAX} + 1 : uint64_t{INT64_MAX});
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

double LineReader::read_real(std::string_view what) {
  const int number_column = column();
  const std::string text(scan_run([](char c) { return syntax::is_number_char(c) || c == '-' || c == '+'; }));
  if (text.empty()) fail_expected(number_column, what);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value))
    fail(number_column, fmt::format("malformed number '{}' for {}", text, what),
         "write it as 0.125 or 1e-05");
  return value;
}

std::vector<std::string> LineReader::read_name_list(std::string_view what,
                                                    const std::vector<std::string>& allowed,
                                                    std::string hint) {
  std::vector<std::string> names;
  do {
    const int name_column = column();
    const std::string name(scan_word());
    if (name.empty()) fail_expected(name_column, what, hint);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      fail(name_column,
           fmt::format("'{}' is not one of {}{}", name, join_alternatives(allowed),
                       did_you_mean(name, allowed)),
           hint);
    names.push_back(name);
  } while (accept('+'));
  return names;
}

std::vector<int64_t> LineReader::read_integer_list(const IntegerListRule& rule) {
  constexpr const char* kListSyntax =
      "a list is comma-separated items: v, a-b (a, a+1, ..., b with 0 <= a < b) or v*N (N copies of v), e.g. "
      "4,0-3,-1*2";
  const std::string what = fmt::format("a {}", rule.item);
  std::vector<int64_t> values;
  // Grows with what the text lists, never to the declared count up front: a short hostile line stays cheap.
  values.reserve(static_cast<size_t>(std::min<int64_t>(rule.count, 4096)));
  const int list_column = column();
  const auto check_bounds = [&](int value_column, int64_t value) {
    if (value < rule.minimum || value > rule.maximum)
      fail(value_column, fmt::format("{} {} is outside {}..{}", rule.item, value, rule.minimum, rule.maximum),
           rule.range_hint);
  };
  // `more` values are about to join the list (more - 1 compared, so that a range 0-INT64_MAX cannot
  // overflow).
  const auto check_room = [&](int item_column, uint64_t more_minus_one) {
    const uint64_t room = static_cast<uint64_t>(rule.count) - values.size();
    if (more_minus_one >= room)
      fail(item_column,
           fmt::format("{}= lists more than the tensor's {} {}", rule.key, rule.count, rule.noun),
           rule.count_hint);
  };
  do {
    const int item_column = column();
    if (at_operation_end() || next_is(',')) fail_expected(item_column, what, kListSyntax);
    const bool negative = next_is('-');
    const int64_t first = read_signed(what);
    check_bounds(item_column, first);
    if (negative && next_is('-')) fail(column(), "a range a-b starts at a non-negative value", kListSyntax);
    if (!negative && accept('-')) {
      const int last_column = column();
      const int64_t last = static_cast<int64_t>(
          read_unsigned(fmt::format("the end of the range {}-", first), static_cast<uint64_t>(INT64_MAX)));
      if (last <= first)
        fail(item_column, fmt::format("the range {}-{} does not ascend", first, last),
             "a-b lists a, a+1, ..., b and needs b > a; write descending rows one by one");
      check_bounds(last_column, last);
      check_room(item_column, static_cast<uint64_t>(last - first));
      for (int64_t value = first; value <= last; ++value) values.push_back(value);
    } else if (accept('*')) {
      const int count_column = column();
      const uint64_t copies = read_unsigned("a repeat count");
      if (copies == 0) fail(count_column, "a repeat count is at least 1", "v*N lists N copies of v");
      check_room(item_column, copies - 1);
      values.insert(values.end(), static_cast<size_t>(copies), first);
    } else {
      check_room(item_column, 0);
      values.push_back(first);
    }
  } while (accept(','));
  if (static_cast<int64_t>(values.size()) != rule.count)
    fail(
        list_column,
        fmt::format("{}= lists {} {}, but the tensor has {}", rule.key, values.size(), rule.noun, rule.count),
        rule.count_hint);
  return values;
}

bool LineReader::read_acc() {
  return read_zero_or_one("acc", "acc=1 accumulates into O");
}

bool LineReader::read_zero_or_one(const char* name, const char* meaning) {
  const int value_column = column();
  const uint64_t value = read_unsigned(fmt::format("{} (0 or 1)", name));
  if (value > 1) fail(value_column, fmt::format("{} must be 0 or 1, found {}", name, value), meaning);
  return value == 1;
}

size_t LineReader::read_option(const std::vector<std::string>& keys, uint32_t flags, uint32_t& given,
                               std::string_view operation, const char* syntax) {
  const int key_column = column();
  const std::string_view key = scan_word();
  if (key.empty()) fail_expected(key_column, fmt::format("an option of {}", operation), syntax);
  const auto found = std::find(keys.begin(), keys.end(), key);
  if (found == keys.end())
    fail(key_column,
         fmt::format("unknown key '{}' for {}{}", key, operation, did_you_mean(std::string(key), keys)),
         syntax);
  const size_t index = static_cast<size_t>(found - keys.begin());
  const uint32_t bit = 1u << index;
  if (given & bit) fail(key_column, fmt::format("duplicate '{}'", key), "each key may appear once");
  given |= bit;
  if (!(flags & bit) && !accept('=')) expect('=', fmt::format("'=' after '{}'", key), syntax);
  return index;
}

void LineReader::require_options(const std::vector<std::string>& keys, uint32_t given, uint32_t required,
                                 int column, std::string_view operation, const char* syntax) {
  for (size_t index = 0; index < keys.size(); ++index)
    if ((required & (1u << index)) && !(given & (1u << index)))
      fail(column, fmt::format("{} is missing '{}='", operation, keys[index]), syntax);
}

void LineReader::skip_blanks() {
  while (position_ < line_.size() && is_blank(line_[position_])) ++position_;
}

int LineReader::column() {
  skip_blanks();
  return static_cast<int>(position_) + 1;
}

bool LineReader::at_line_end() {
  skip_blanks();
  return position_ == line_.size();
}

bool LineReader::next_is(char c) {
  skip_blanks();
  return position_ < line_.size() && line_[position_] == c;
}

bool LineReader::next_is_digit() {
  skip_blanks();
  return position_ < line_.size() && is_digit(line_[position_]);
}

bool LineReader::accept(char c) {
  if (!next_is(c)) return false;
  ++position_;
  return true;
}

bool LineReader::accept_arrow() {
  skip_blanks();
  if (line_.compare(position_, 2, "->") != 0) return false;
  position_ += 2;
  return true;
}

void LineReader::expect(char c, std::string_view what, const char* hint) {
  const int symbol_column = column();
  if (!accept(c)) fail_expected(symbol_column, what, hint);
}

void LineReader::expect_arrow(std::string_view what, const char* hint) {
  const int arrow_column = column();
  if (!accept_arrow()) fail_expected(arrow_column, what, hint);
}

void LineReader::expect_line_end(std::string_view after, const char* hint) {
  if (!at_line_end()) fail_expected(column(), fmt::format("the end of the line after {}", after), hint);
}

std::string_view LineReader::scan_free_text() {
  return scan_run([](char c) { return !is_blank(c); });
}

void LineReader::fail_expected(int column, std::string_view what, std::string hint) {
  position_ = static_cast<size_t>(column - 1);
  std::string found = "the end of the line";
  if (!at_line_end()) {
    // Enough of the rest of the line to recognise, not all of it.
    constexpr size_t kShown = 24;
    const size_t end = std::min(line_.find_first_of(" \t", position_), position_ + kShown);
    found = fmt::format("'{}'", line_.substr(position_, end - position_));
  }
  fail(column, fmt::format("expected {}, found {}", what, found), std::move(hint));
}

void LineReader::fail(int column, std::string message, std::string hint) const {
  throw InputError(SourceLocation{program_.source_file, line_number_, column}, field(), std::move(message),
                   std::move(hint));
}

std::string LineReader::field() const {
  if (in_instruction_) {
    const CoreProgram& core = program_.cores[static_cast<size_t>(current_core_)];
    if (!queue_) return fmt::format("core {},{}", core.coord.row, core.coord.col);
    Instruction instruction;
    instruction.queue = *queue_;
    const auto position = std::count_if(core.instructions.begin(), core.instructions.end(),
                                        [&](const Instruction& earlier) { return earlier.queue == *queue_; });
    return describe_instruction(program_, core, instruction, position);
  }
  if (!tensor_name_.empty()) return fmt::format("tensor {}", tensor_name_);
  if (core_line_coord_) return fmt::format("core {},{}", core_line_coord_->row, core_line_coord_->col);
  return std::string(line_subject_);
}

}  // namespace tessera::arch
