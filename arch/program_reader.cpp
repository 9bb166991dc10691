// Reading the text form of a tile program (docs/tile-program.md): read_program, read_program_file.
//
// The reader scans one line at a time with a hand-written cursor rather than a regex per line: programs run
// to hundreds of thousands of lines, and every error must name the column of the token it is about.
// Blanks may stand between any two tokens (`A[ 0:128 , 0:64 ]` reads like `A[0:128, 0:64]`); the writer
// (program_writer.cpp) always produces the canonical spelling.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "arch/program.hpp"
#include "arch/program_syntax.hpp"
#include "common/text.hpp"

namespace tessera::arch {
namespace {

using namespace syntax;

// Hints that show the expected form of a line or operation.
constexpr const char* kHeaderSyntax =
    "a program starts: 'tessera-program 1', 'name <program name>', 'mesh <rows>x<cols>', then an optional "
    "'op' line and the 'tensor' lines";
constexpr const char* kTensorSyntax =
    "a tensor is declared: tensor <name> <dtype> <rows>x<cols> at <dram address> input seed=<seed> "
    "id=<generator id>, or ... output, or tensor <name> <dtype> <rows>x<cols> view im2col <source> n= h= w= "
    "c= r= s= stride= pad= dilation= groups=, or ... view blockdiag <source> groups= packed= window= "
    "group_c= "
    "group_k=";
constexpr const char* kRegionSyntax = "a region is written T[r0:r1, c0:c1]";
constexpr const char* kCoordSyntax = "a core is written row,col, e.g. 0,1";
constexpr const char* kLoadSyntax =
    "a load is written: load T[r0:r1, c0:c1] -> ADDR [pitch=BYTES] [to R,C R,C ...]";
constexpr const char* kStoreSyntax = "a store is written: store ADDR [pitch=BYTES] -> T[r0:r1, c0:c1] [add]";
constexpr const char* kMatmulSyntax =
    "a matmul is written: ws|os|is a=ADDR w=ADDR o=ADDR m=M n=N k=K dtype=DT acc=0|1 [a_pitch=B] "
    "[w_pitch=B] [o_pitch=B]";
constexpr const char* kConvSyntax =
    "a conv is written: conv ws|os|is|rs a=ADDR w=ADDR o=ADDR e=E q=Q m=M c=C ih=IH iw=IW r=R s=S "
    "[stride=1] [dilation=1] [pad_top=0] [pad_left=0] dtype=DT acc=0|1 [a_pitch=B] [w_pitch=B] [o_pitch=B]";
constexpr const char* kSendSyntax =
    "a send is written: send ADDR rows=R bytes=B [pitch=P] -> R,C ADDR [pitch=P] [add=fp32|int32]";
constexpr const char* kWaitSyntax =
    "waits are written name, name[i], name@row,col or name*count (a_full[0]@0,1*2), separated by blanks";
constexpr const char* kSignalSyntax =
    "signals are written name, name[i] or name@row,col (a_full[0]@0,1), separated by blanks";

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

// "pe", "noc", "dma<engine>".
std::optional<QueueId> parse_queue(std::string_view word) {
  if (word == "pe") return QueueId{QueueKind::pe, 0};
  if (word == "noc") return QueueId{QueueKind::noc, 0};
  constexpr std::string_view kDma = "dma";
  const std::string_view engine = word.substr(std::min(word.size(), kDma.size()));
  // Six digits keep the engine number well inside an int.
  if (word.substr(0, kDma.size()) != kDma || engine.empty() || engine.size() > 6 ||
      !std::all_of(engine.begin(), engine.end(), is_digit))
    return std::nullopt;
  uint64_t index = 0;
  parse_digits(engine, 10, index);
  return QueueId{QueueKind::dma, static_cast<int>(index)};
}

const std::vector<std::string>& operations_of(QueueKind kind) {
  static const std::vector<std::string> dma = {"load", "store"};
  static const std::vector<std::string> noc = {"send"};
  switch (kind) {
    case QueueKind::dma:
      return dma;
    case QueueKind::pe: {
      static const std::vector<std::string> pe = [] {
        std::vector<std::string> names = dataflow_names();
        names.push_back("conv");
        return names;
      }();
      return pe;
    }
    case QueueKind::noc:
      return noc;
  }
  return noc;
}

const char* queues_running(QueueKind kind) {
  switch (kind) {
    case QueueKind::dma:
      return "the DMA queues (dma0, dma1, ...)";
    case QueueKind::pe:
      return "the pe queue";
    case QueueKind::noc:
      return "the noc queue";
  }
  return "?";
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

// NocSend::accumulate_dtype: what a reduction adds in (common/dtype.hpp, accumulator_of).
const std::vector<std::string>& accumulator_dtype_names() {
  static const std::vector<std::string> names = {name_of(DType::fp32), name_of(DType::int32)};
  return names;
}

// Header lines in the order they must appear. Each appears at most once, except tensor; core stands for
// the core blocks, which follow the header.
enum class HeaderLine : int { version, name, mesh, op, tensor, core };
constexpr int kHeaderLines = 6;

const char* keyword_of(HeaderLine line) {
  switch (line) {
    case HeaderLine::version:
      return "tessera-program";
    case HeaderLine::name:
      return "name";
    case HeaderLine::mesh:
      return "mesh";
    case HeaderLine::op:
      return "op";
    case HeaderLine::tensor:
      return "tensor";
    case HeaderLine::core:
      return "core";
  }
  return "?";
}

std::optional<HeaderLine> parse_header_keyword(std::string_view word) {
  for (HeaderLine line : {HeaderLine::name, HeaderLine::mesh, HeaderLine::op, HeaderLine::tensor})
    if (word == keyword_of(line)) return line;
  return std::nullopt;
}

class ProgramReader {
 public:
  ProgramReader(std::string_view text, const std::string& file_name) : text_(text) {
    program_.source_file = file_name;
  }

  Program read() {
    size_t line_start = 0;
    while (line_start < text_.size()) {
      size_t line_end = text_.find('\n', line_start);
      if (line_end == std::string_view::npos) line_end = text_.size();
      start_line(text_.substr(line_start, line_end - line_start));
      if (!at_line_end()) read_line();
      line_start = line_end + 1;
    }
    finish();
    return std::move(program_);
  }

 private:
  void start_line(std::string_view line) {
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

  void read_line() {
    if (!header_line_[static_cast<int>(HeaderLine::version)]) return read_version();
    const int keyword_column = column();
    const std::string_view keyword = scan_word();
    if (keyword == "core") return read_core(keyword_column);
    if (const std::optional<QueueId> queue = parse_queue(keyword)) {
      if (current_core_ < 0) {
        line_subject_ = keyword;
        fail(keyword_column, fmt::format("instruction for queue {} before any 'core' line", keyword),
             "instructions follow a 'core <row>,<col>' line, which names the core that runs them");
      }
      return read_instruction(*queue);
    }
    if (const std::optional<HeaderLine> header = parse_header_keyword(keyword)) {
      line_subject_ = keyword;
      enter_header(*header, keyword_column);
      switch (*header) {
        case HeaderLine::name:
          return read_name_line();
        case HeaderLine::mesh:
          return read_mesh();
        case HeaderLine::op:
          return read_op();
        default:
          return read_tensor();
      }
    }
    if (current_core_ >= 0) fail_unknown_queue(keyword_column, keyword);
    if (keyword.empty())
      fail_expected(keyword_column, "a header keyword (name, mesh, op or tensor) or 'core'", kHeaderSyntax);
    fail(keyword_column,
         fmt::format("unknown header keyword '{}'{}", keyword,
                     did_you_mean(std::string(keyword), {"name", "mesh", "op", "tensor", "core"})),
         "header lines are name, mesh, op and tensor; instructions follow a 'core <row>,<col>' line");
  }

  // Keeps the header in the documented order and checks that the required lines came before `line`.
  void enter_header(HeaderLine line, int column) {
    const int rank = static_cast<int>(line);
    if (last_header_ == HeaderLine::core && line != HeaderLine::core)
      fail(column, fmt::format("'{}' belongs to the header, before the first 'core' line", keyword_of(line)),
           kHeaderSyntax);
    if (line != HeaderLine::tensor && line != HeaderLine::core && header_line_[rank])
      fail(column, fmt::format("duplicate '{}' line", keyword_of(line)),
           fmt::format("the first is on line {}", header_line_[rank]));
    if (rank < static_cast<int>(last_header_))
      fail(column, fmt::format("'{}' line after the '{}' line", keyword_of(line), keyword_of(last_header_)),
           kHeaderSyntax);
    for (HeaderLine required : {HeaderLine::name, HeaderLine::mesh})
      if (rank > static_cast<int>(required) && !header_line_[static_cast<int>(required)])
        fail(column,
             fmt::format("missing '{}' line before this '{}' line", keyword_of(required), keyword_of(line)),
             kHeaderSyntax);
    last_header_ = line;
    if (!header_line_[rank]) header_line_[rank] = line_number_;
  }

  void finish() {
    if (!header_line_[static_cast<int>(HeaderLine::version)])
      throw InputError(SourceLocation{program_.source_file, 1, 1}, keyword_of(HeaderLine::version),
                       fmt::format("expected '{} {}' as the first line; the file is empty or only comments",
                                   kFormatMagic, kFormatVersion),
                       "is this a tile program (*.tprog)?");
    for (HeaderLine required : {HeaderLine::name, HeaderLine::mesh})
      if (!header_line_[static_cast<int>(required)])
        throw InputError(SourceLocation{program_.source_file, line_number_, 0}, "header",
                         fmt::format("the program has no '{}' line", keyword_of(required)), kHeaderSyntax);
  }

  // ---- header lines

  void read_version() {
    line_subject_ = keyword_of(HeaderLine::version);
    const int magic_column = column();
    const std::string_view magic = scan_free_text();
    if (magic != kFormatMagic)
      fail(magic_column,
           fmt::format("expected '{} {}' as the first line, found '{}'", kFormatMagic, kFormatVersion, magic),
           "every tile program (*.tprog) starts with its format version");
    const int version_column = column();
    const std::string_view version = scan_free_text();
    if (version.empty())
      fail_expected(version_column, fmt::format("the format version after '{}'", kFormatMagic));
    if (version != kFormatVersion)
      fail(version_column,
           fmt::format("unsupported format version '{}'; this tessera reads version {}", version,
                       kFormatVersion),
           "write the program again with this tessera's 'tessera map'");
    expect_line_end("the format version");
    header_line_[static_cast<int>(HeaderLine::version)] = line_number_;
    last_header_ = HeaderLine::version;
  }

  void read_name_line() {
    const int name_column = column();
    const std::string_view name = scan_free_text();
    if (name.empty()) fail_expected(name_column, "the program name");
    program_.name = name;
    expect_line_end("the program name", "a program name contains no blanks");
  }

  void read_mesh() {
    const int shape_column = column();
    const auto [rows, cols] = read_shape("the mesh");
    // Core indices are ints (arch/topology.hpp, core_index).
    if (rows > static_cast<uint64_t>(INT_MAX) / cols)
      fail(shape_column, fmt::format("a {}x{} mesh has more cores than tessera can number", rows, cols));
    program_.mesh.rows = static_cast<int>(rows);
    program_.mesh.cols = static_cast<int>(cols);
    expect_line_end("the mesh");
  }

  void read_op() {
    OpBinding op;
    op.kind = read_name("the operator kind");
    while (!at_line_end()) {
      const int key_column = column();
      const std::string_view key = read_name("an attribute key=value");
      expect('=', fmt::format("'=' after the attribute '{}'", key), "attributes are written key=value");
      const int value_column = column();
      const std::string_view value = scan_free_text();
      if (value.empty()) fail_expected(value_column, fmt::format("the value of the attribute '{}'", key));
      if (!op.attributes.emplace(std::string(key), std::string(value)).second)
        fail(key_column, fmt::format("duplicate attribute '{}'", key), "each attribute may appear once");
    }
    program_.op = std::move(op);
  }

  void read_tensor() {
    const int name_column = column();
    const std::string_view name = read_name("a tensor name");
    tensor_name_ = name;
    TensorDecl tensor;
    tensor.name = name;
    if (const int earlier = program_.tensor_id(tensor.name); earlier >= 0)
      fail(name_column, fmt::format("duplicate tensor '{}'", name),
           fmt::format("the first is declared on line {}", tensor_lines_[static_cast<size_t>(earlier)]));
    tensor.dtype = read_dtype("dtype", all_dtype_names());
    const int shape_column = column();
    const auto [rows, cols] = read_shape("the tensor shape");
    // size_in_bytes() multiplies them with the element size in int64.
    if (rows > static_cast<uint64_t>(INT64_MAX) / cols / static_cast<uint64_t>(size_bytes(tensor.dtype)))
      fail(shape_column, fmt::format("a {}x{} tensor is too large", rows, cols));
    tensor.rows = static_cast<int64_t>(rows);
    tensor.cols = static_cast<int64_t>(cols);
    const int at_column = column();
    const std::string_view placement = scan_word();
    if (placement == "view") {
      read_view(tensor, shape_column);
      program_.tensors.push_back(std::move(tensor));
      tensor_lines_.push_back(line_number_);
      return;
    }
    if (placement != "at")
      fail_expected(at_column, "'at' and the tensor's DRAM address, or 'view'", kTensorSyntax);
    tensor.dram_address = read_unsigned("a DRAM address");

    const int role_column = column();
    const std::string_view role = scan_word();
    if (role == "output") {
      tensor.role = TensorRole::output;
      expect_line_end("'output'", "outputs start as zeros; only inputs take seed= and id=");
    } else if (role == "input") {
      tensor.role = TensorRole::input;
      static const std::vector<std::string> options = {"seed", "id"};
      uint32_t given = 0;
      while (!at_line_end()) {
        if (read_option(options, 0, given, "an input tensor", kTensorSyntax) == 0)
          tensor.seed = read_unsigned("the generator seed");
        else
          tensor.generator_id = static_cast<uint32_t>(read_unsigned("the generator id", UINT32_MAX));
      }
      require_options(options, given, 0b11, role_column, "an input tensor", kTensorSyntax);
    } else if (role.empty()) {
      fail_expected(role_column, "'input' or 'output'", kTensorSyntax);
    } else {
      fail(role_column,
           fmt::format("unknown tensor role '{}'{}", role,
                       did_you_mean(std::string(role), {"input", "output"})),
           "a tensor is an input (generated) or an output (starts as zeros)");
    }
    program_.tensors.push_back(std::move(tensor));
    tensor_lines_.push_back(line_number_);
  }

  // `view im2col <source> ...` or `view blockdiag <source> ...` after the shape.
  void read_view(TensorDecl& tensor, int shape_column) {
    tensor.role = TensorRole::view;
    const int kind_column = column();
    const std::string_view kind = scan_word();
    if (kind != "im2col" && kind != "blockdiag")
      fail(
          kind_column,
          kind.empty() ? "expected the view kind"
                       : fmt::format("unknown view kind '{}'{}", kind,
                                     did_you_mean(std::string(kind), {"im2col", "blockdiag"})),
          "views are im2col (the patches of an NHWC input as GEMM rows) and blockdiag (the weights of packed "
          "groups as one block-diagonal operand)");
    const int source_column = column();
    const std::string_view source_name = read_name("the view's source tensor", kTensorSyntax);
    const int source_index = program_.tensor_id(std::string(source_name));
    if (source_index < 0) fail_unknown_tensor(source_column, source_name);
    const TensorDecl& source = program_.tensors[static_cast<size_t>(source_index)];
    if (source.role != TensorRole::input)
      fail(source_column, fmt::format("the view's source {} is not an input tensor", source_name),
           "a view reads a generated input");
    if (source.dtype != tensor.dtype)
      fail(source_column,
           fmt::format("the view is {} but its source {} is {}", name_of(tensor.dtype), source_name,
                       name_of(source.dtype)),
           "a view has its source's element type");
    if (kind == "blockdiag") {
      read_block_diagonal(tensor, source_index, source_name, source_column, shape_column);
      return;
    }
    Im2colView view;
    view.source = source_index;
    static const std::vector<std::string> keys = {"n", "h",      "w",   "c",        "r",
                                                  "s", "stride", "pad", "dilation", "groups"};
    int64_t* fields[] = {&view.n, &view.h,      &view.w,   &view.c,        &view.r,
                         &view.s, &view.stride, &view.pad, &view.dilation, &view.groups};
    uint32_t given = 0;
    const int options_column = column();
    while (!at_line_end()) {
      const size_t index = read_option(keys, 0, given, "an im2col view", kTensorSyntax);
      *fields[index] = index == 7 ? read_size("pad") : read_positive(keys[index]);
    }
    require_options(keys, given, (1u << keys.size()) - 1, options_column, "an im2col view", kTensorSyntax);
    if (source.rows != view.n * view.h * view.w || source.cols != view.c)
      fail(source_column,
           fmt::format("source {} is {}x{}, but n*h*w x c is {}x{}", source_name, source.rows, source.cols,
                       view.n * view.h * view.w, view.c),
           "the source of an im2col view is the NHWC input, one row per pixel");
    if (view.c % view.groups != 0)
      fail(options_column, fmt::format("c={} is not a multiple of groups={}", view.c, view.groups));
    if (view.dilation * (view.r - 1) + 1 > view.h + 2 * view.pad ||
        view.dilation * (view.s - 1) + 1 > view.w + 2 * view.pad)
      fail(options_column, "the filter is larger than the padded input", "");
    if (tensor.rows != view.rows() || tensor.cols != view.cols())
      fail(shape_column, fmt::format("the im2col view is {}x{} (n*p*q x groups*r*s*c/groups), not {}x{}",
                                     view.rows(), view.cols(), tensor.rows, tensor.cols));
    tensor.im2col = view;
  }

  // `view blockdiag <W> groups= packed= window= group_c= group_k=`.
  void read_block_diagonal(TensorDecl& tensor, int source_index, std::string_view source_name,
                           int source_column, int shape_column) {
    BlockDiagonalView view;
    view.source = source_index;
    static const std::vector<std::string> keys = {"groups", "packed", "window", "group_c", "group_k"};
    int64_t* fields[] = {&view.groups, &view.packed, &view.window, &view.group_c, &view.group_k};
    uint32_t given = 0;
    const int options_column = column();
    while (!at_line_end()) {
      const size_t index = read_option(keys, 0, given, "a blockdiag view", kTensorSyntax);
      *fields[index] = read_positive(keys[index]);
    }
    require_options(keys, given, (1u << keys.size()) - 1, options_column, "a blockdiag view", kTensorSyntax);
    if (view.groups % view.packed != 0)
      fail(options_column, fmt::format("packed={} does not divide groups={}", view.packed, view.groups));
    const TensorDecl& source = program_.tensors[static_cast<size_t>(source_index)];
    if (source.rows != view.rows() || source.cols != view.group_k)
      fail(source_column,
           fmt::format("source {} is {}x{}, but groups*window*group_c x group_k is {}x{}", source_name,
                       source.rows, source.cols, view.rows(), view.group_k),
           "the source of a blockdiag view is a grouped conv's weights, one row per (group, tap)");
    if (tensor.rows != view.rows() || tensor.cols != view.cols())
      fail(shape_column,
           fmt::format("the blockdiag view is {}x{} (groups*window*group_c x packed*group_k), not {}x{}",
                       view.rows(), view.cols(), tensor.rows, tensor.cols));
    tensor.block_diagonal = view;
  }

  // ---- core blocks and instructions

  void read_core(int keyword_column) {
    line_subject_ = keyword_of(HeaderLine::core);
    enter_header(HeaderLine::core, keyword_column);
    const int coord_column = column();
    const Coord coord = read_coord();
    core_line_coord_ = coord;
    const auto [first, inserted] = core_lines_.emplace(core_index(coord, program_.mesh), line_number_);
    if (!inserted)
      fail(coord_column, fmt::format("core {},{} appears a second time", coord.row, coord.col),
           fmt::format("its block starts on line {}; a core appears at most once", first->second));
    expect_line_end("the core's row,col", "the core's instructions go on the lines below 'core row,col'");
    program_.cores.push_back(CoreProgram{coord, {}});
    current_core_ = static_cast<int>(program_.cores.size()) - 1;
  }

  void fail_unknown_queue(int column, std::string_view word) {
    in_instruction_ = true;
    if (word.empty()) fail_expected(column, "a queue (dma0, dma1, ..., pe or noc) or 'core'");
    // Suggest the DMA engine the word names, if it ends in digits (dam1 -> dma1).
    const size_t digits = word.find_last_not_of("0123456789") + 1;
    const std::string engine = digits < word.size() ? std::string(word.substr(digits)) : "0";
    fail(column,
         fmt::format("unknown queue '{}'{}", word,
                     did_you_mean(std::string(word), {"dma" + engine, "pe", "noc", "core"})),
         "queues are dma0, dma1, ... (one per DMA engine), pe and noc; 'core <row>,<col>' starts the next "
         "core");
  }

  void read_instruction(QueueId queue) {
    in_instruction_ = true;
    queue_ = queue;
    Instruction instruction;
    instruction.queue = queue;
    instruction.line = line_number_;
    const int operation_column = column();
    const std::string_view operation = scan_word();
    const std::vector<std::string>& operations = operations_of(queue.kind);
    if (std::find(operations.begin(), operations.end(), operation) == operations.end())
      fail_unknown_operation(operation_column, operation, queue);
    switch (queue.kind) {
      case QueueKind::dma:
        if (operation == "load")
          instruction.operation = read_load();
        else
          instruction.operation = read_store();
        break;
      case QueueKind::pe:
        if (operation == "conv")
          instruction.operation = read_conv(operation_column);
        else
          instruction.operation = read_matmul(parse_dataflow(std::string(operation)), operation_column);
        break;
      case QueueKind::noc:
        instruction.operation = read_send(operation_column);
        break;
    }
    read_synchronisation(instruction);
    program_.cores[static_cast<size_t>(current_core_)].instructions.push_back(std::move(instruction));
  }

  void fail_unknown_operation(int column, std::string_view operation, const QueueId& queue) {
    const std::vector<std::string>& operations = operations_of(queue.kind);
    std::string hint = fmt::format("the {} queue runs {}", name_of(queue), join_alternatives(operations));
    if (operation.empty())
      fail_expected(column, fmt::format("an operation for queue {}", name_of(queue)), hint);
    // An operation of another queue (pe load) is a likelier slip than a typo: say where it runs.
    for (QueueKind other : {QueueKind::dma, QueueKind::pe, QueueKind::noc}) {
      const std::vector<std::string>& elsewhere = operations_of(other);
      if (other != queue.kind && std::find(elsewhere.begin(), elsewhere.end(), operation) != elsewhere.end())
        hint += fmt::format("; '{}' runs on {}", operation, queues_running(other));
    }
    fail(column,
         fmt::format("unknown operation '{}' for queue {}{}", operation, name_of(queue),
                     did_you_mean(std::string(operation), operations)),
         hint);
  }

  DmaLoad read_load() {
    DmaLoad load;
    load.source = read_region();
    expect_arrow("'->' and the SRAM address after the region", kLoadSyntax);
    load.sram_address = read_unsigned("an SRAM address");
    static const std::vector<std::string> options = {"pitch", "to"};
    constexpr uint32_t kTo = 0b10;  // a list of cores, not key=value
    uint32_t given = 0;
    while (!at_operation_end()) {
      if (read_option(options, kTo, given, "load", kLoadSyntax) == 0) {
        load.sram_pitch_bytes = read_size("the SRAM row pitch in bytes");
      } else {
        do {
          const int core_column = column();
          const int core = read_core_index();
          if (std::find(load.destinations.begin(), load.destinations.end(), core) !=
              load.destinations.end()) {
            const Coord coord = core_coord(core, program_.mesh);
            fail(core_column, fmt::format("core {},{} is listed twice", coord.row, coord.col),
                 "a multicast reaches each listed core once");
          }
          load.destinations.push_back(core);
        } while (next_is_digit());
      }
    }
    return load;
  }

  DmaStore read_store() {
    DmaStore store;
    store.sram_address = read_unsigned("an SRAM address");
    static const std::vector<std::string> source_options = {"pitch"};
    uint32_t given = 0;
    while (!accept_arrow()) {
      if (at_operation_end()) fail_expected(column(), "'->' and the destination region", kStoreSyntax);
      read_option(source_options, 0, given, "store", kStoreSyntax);
      store.sram_pitch_bytes = read_size("the SRAM row pitch in bytes");
    }
    store.destination = read_region();
    static const std::vector<std::string> destination_options = {"add"};
    constexpr uint32_t kAdd = 0b1;  // a flag, not key=value
    given = 0;
    while (!at_operation_end()) {
      read_option(destination_options, kAdd, given, "store", kStoreSyntax);
      store.accumulate = true;
    }
    return store;
  }

  PeMatmul read_matmul(Dataflow dataflow, int operation_column) {
    PeMatmul matmul;
    matmul.dataflow = dataflow;
    enum MatmulOption : size_t {
      key_a,
      key_w,
      key_o,
      key_m,
      key_n,
      key_k,
      key_dtype,
      key_acc,
      key_a_pitch,
      key_w_pitch,
      key_o_pitch
    };
    static const std::vector<std::string> options = {"a",     "w",   "o",       "m",       "n",      "k",
                                                     "dtype", "acc", "a_pitch", "w_pitch", "o_pitch"};
    constexpr uint32_t kRequired = 0xff;  // a through acc
    const std::string operation = name_of(dataflow);
    uint32_t given = 0;
    while (!at_operation_end()) {
      switch (read_option(options, 0, given, operation, kMatmulSyntax)) {
        case key_a:
          matmul.a_address = read_unsigned("the SRAM address of A");
          break;
        case key_w:
          matmul.w_address = read_unsigned("the SRAM address of W");
          break;
        case key_o:
          matmul.o_address = read_unsigned("the SRAM address of O");
          break;
        case key_m:
          matmul.m = read_positive("m");
          break;
        case key_n:
          matmul.n = read_positive("n");
          break;
        case key_k:
          matmul.k = read_positive("k");
          break;
        case key_dtype:
          matmul.dtype = read_dtype("dtype", all_dtype_names());
          break;
        case key_acc: {
          const int value_column = column();
          const uint64_t value = read_unsigned("acc (0 or 1)");
          if (value > 1)
            fail(value_column, fmt::format("acc must be 0 or 1, found {}", value),
                 "acc=1 accumulates into O");
          matmul.accumulate = value == 1;
          break;
        }
        case key_a_pitch:
          matmul.a_pitch_bytes = read_size("the row pitch of A in bytes");
          break;
        case key_w_pitch:
          matmul.w_pitch_bytes = read_size("the row pitch of W in bytes");
          break;
        case key_o_pitch:
          matmul.o_pitch_bytes = read_size("the row pitch of O in bytes");
          break;
      }
    }
    require_options(options, given, kRequired, operation_column, operation, kMatmulSyntax);
    return matmul;
  }

  PeConv read_conv(int operation_column) {
    PeConv conv;
    const int dataflow_column = column();
    const std::string_view dataflow = scan_word();
    const std::vector<std::string>& dataflows = dataflow_names();
    if (std::find(dataflows.begin(), dataflows.end(), dataflow) == dataflows.end()) {
      if (dataflow.empty())
        fail_expected(dataflow_column, "the conv's dataflow (ws, os, is or rs)", kConvSyntax);
      fail(dataflow_column,
           fmt::format("unknown dataflow '{}'{}", dataflow, did_you_mean(std::string(dataflow), dataflows)),
           kConvSyntax);
    }
    conv.dataflow = parse_dataflow(std::string(dataflow));
    static const std::vector<std::string> options = {
        "a", "w",     "o",   "e",      "q",        "m",       "c",        "ih",      "iw",      "r",
        "s", "dtype", "acc", "stride", "dilation", "pad_top", "pad_left", "a_pitch", "w_pitch", "o_pitch"};
    constexpr uint32_t kRequired = 0x1fff;  // a through acc
    int64_t* sizes[] = {&conv.e, &conv.q, &conv.m, &conv.c, &conv.ih, &conv.iw, &conv.r, &conv.s};
    uint64_t* addresses[] = {&conv.a_address, &conv.w_address, &conv.o_address};
    int64_t* pitches[] = {&conv.a_pitch_bytes, &conv.w_pitch_bytes, &conv.o_pitch_bytes};
    uint32_t given = 0;
    while (!at_operation_end()) {
      const size_t option = read_option(options, 0, given, "conv", kConvSyntax);
      if (option < 3) {
        *addresses[option] = read_unsigned("an SRAM address");
      } else if (option < 11) {
        *sizes[option - 3] = read_positive(options[option]);
      } else if (option == 11) {
        conv.dtype = read_dtype("dtype", all_dtype_names());
      } else if (option == 12) {
        const int value_column = column();
        const uint64_t value = read_unsigned("acc (0 or 1)");
        if (value > 1)
          fail(value_column, fmt::format("acc must be 0 or 1, found {}", value), "acc=1 accumulates into O");
        conv.accumulate = value == 1;
      } else if (option == 13) {
        conv.stride = read_positive("stride");
      } else if (option == 14) {
        conv.dilation = read_positive("dilation");
      } else if (option == 15) {
        conv.pad_top = read_size("pad_top");
      } else if (option == 16) {
        conv.pad_left = read_size("pad_left");
      } else {
        *pitches[option - 17] = read_size("a row pitch in bytes");
      }
    }
    require_options(options, given, kRequired, operation_column, "conv", kConvSyntax);
    return conv;
  }

  NocSend read_send(int operation_column) {
    NocSend send;
    send.source_address = read_unsigned("the source SRAM address");
    enum SourceOption : size_t { key_rows, key_bytes, key_pitch };
    static const std::vector<std::string> source_options = {"rows", "bytes", "pitch"};
    uint32_t given = 0;
    while (!accept_arrow()) {
      if (at_operation_end()) fail_expected(column(), "'->' and the destination core", kSendSyntax);
      switch (read_option(source_options, 0, given, "send", kSendSyntax)) {
        case key_rows:
          send.rows = read_positive("rows");
          break;
        case key_bytes:
          send.row_bytes = read_positive("bytes");
          break;
        case key_pitch:
          send.source_pitch_bytes = read_size("the source row pitch in bytes");
          break;
      }
    }
    require_options(source_options, given, 0b011, operation_column, "send", kSendSyntax);
    send.destination_core = read_core_index();
    send.destination_address = read_unsigned("the destination SRAM address");
    static const std::vector<std::string> destination_options = {"pitch", "add"};
    given = 0;
    while (!at_operation_end()) {
      if (read_option(destination_options, 0, given, "send", kSendSyntax) == 0) {
        send.destination_pitch_bytes = read_size("the destination row pitch in bytes");
      } else {
        send.accumulate = true;
        send.accumulate_dtype = read_dtype("accumulation type", accumulator_dtype_names());
      }
    }
    return send;
  }

  // `[; wait ...] [; signal ...]` and the end of the line.
  void read_synchronisation(Instruction& instruction) {
    bool waits_given = false;
    bool signals_given = false;
    while (accept(';')) {
      const int section_column = column();
      const std::string_view section = scan_word();
      if (section == "wait") {
        if (waits_given) fail(section_column, "duplicate '; wait'", "list every wait after one '; wait'");
        if (signals_given)
          fail(section_column, "'; wait' after '; signal'", "write '; wait ...' before '; signal ...'");
        waits_given = true;
        do instruction.waits.push_back(read_wait());
        while (!at_operation_end());
      } else if (section == "signal") {
        if (signals_given)
          fail(section_column, "duplicate '; signal'", "list every signal after one '; signal'");
        signals_given = true;
        do instruction.signals.push_back(read_signal());
        while (!at_operation_end());
      } else if (section.empty()) {
        fail_expected(section_column, "'wait' or 'signal' after ';'");
      } else {
        fail(section_column,
             fmt::format("unknown section '{}'{}", section,
                         did_you_mean(std::string(section), {"wait", "signal"})),
             "after the operation come '; wait ...' and then '; signal ...'");
      }
    }
    expect_line_end("the instruction");
  }

  SemaphoreWait read_wait() {
    SemaphoreWait wait;
    wait.semaphore = read_semaphore(kWaitSyntax);
    if (accept('*')) {
      const int count_column = column();
      const uint64_t count = read_unsigned("a wait count", INT_MAX);
      if (count == 0)
        fail(count_column, "a wait count must be at least 1",
             "*N consumes N signals; without it a wait consumes one");
      wait.count = static_cast<int>(count);
    }
    return wait;
  }

  SemaphoreRef read_signal() {
    const SemaphoreRef signal = read_semaphore(kSignalSyntax);
    if (next_is('*'))
      fail(column(), "a signal posts exactly one signal; counts (*N) are for waits",
           "to post more than one, list the semaphore again");
    return signal;
  }

  SemaphoreRef read_semaphore(const char* syntax) {
    const int name_column = column();
    const std::string_view base = scan_word();
    if (!is_name(base)) fail_expected(name_column, "a semaphore name", syntax);
    semaphore_name_.assign(base);
    while (accept('[')) {
      const uint64_t index = read_unsigned("a semaphore index");
      expect(']', "']' after the semaphore index", syntax);
      fmt::format_to(std::back_inserter(semaphore_name_), "[{}]", index);
    }
    SemaphoreRef semaphore;
    semaphore.id = semaphore_id(semaphore_name_);
    if (accept('@')) semaphore.core = read_core_index();
    return semaphore;
  }

  // Program::semaphore_id searches the list; a map in front of it keeps large programs linear.
  int semaphore_id(const std::string& name) {
    const auto found = semaphore_ids_.find(name);
    if (found != semaphore_ids_.end()) return found->second;
    const int id = program_.semaphore_id(name);
    semaphore_ids_.emplace(name, id);
    return id;
  }

  // ---- values

  TensorRegion read_region() {
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

  // `begin:end` -> (begin, end - begin)
  std::pair<int64_t, int64_t> read_range(std::string_view dimension) {
    const int begin_column = column();
    const int64_t begin = read_size(fmt::format("the first {} of the region", dimension));
    expect(':', fmt::format("':' between the first {} and the end {}", dimension, dimension), kRegionSyntax);
    const int64_t end = read_size(fmt::format("the end {} of the region", dimension));
    if (end <= begin)
      fail(begin_column,
           fmt::format("the {} range {}:{} is empty; the end must be greater than the start", dimension,
                       begin, end),
           fmt::format("{}s r0:r1 are r0 .. r1-1", dimension));
    return {begin, end - begin};
  }

  void fail_unknown_tensor(int column, std::string_view name) {
    std::vector<std::string> declared;
    for (const TensorDecl& tensor : program_.tensors) declared.push_back(tensor.name);
    fail(column, fmt::format("unknown tensor '{}'{}", name, did_you_mean(std::string(name), declared)),
         declared.empty() ? "no tensors are declared; declare them with 'tensor' lines in the header"
                          : fmt::format("declared tensors: {}", fmt::join(declared, ", ")));
  }

  Coord read_coord() {
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

  int read_core_index() { return core_index(read_coord(), program_.mesh); }

  // `<rows>x<cols>`, both positive. Decimal only: in "0x10" the 'x' would be a hexadecimal prefix as much
  // as the separator.
  std::pair<uint64_t, uint64_t> read_shape(std::string_view what) {
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

  DType read_dtype(std::string_view what, const std::vector<std::string>& allowed) {
    const int dtype_column = column();
    const std::string_view word = scan_word();
    if (word.empty()) fail_expected(dtype_column, fmt::format("a {} ({})", what, join_alternatives(allowed)));
    const std::string name(word);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      fail(dtype_column, fmt::format("unknown {} '{}'{}", what, name, did_you_mean(name, allowed)),
           fmt::format("expected {}", join_alternatives(allowed)));
    return *parse_dtype(name);
  }

  std::string_view read_name(std::string_view what, const char* hint = "") {
    const int name_column = column();
    const std::string_view name = scan_word();
    if (!is_name(name)) fail_expected(name_column, what, hint);
    return name;
  }

  uint64_t read_unsigned(std::string_view what, uint64_t maximum = UINT64_MAX) {
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
      fail(number_column, fmt::format("{} is too large for {} (at most {})", text, what, maximum));
    return value;
  }

  int64_t read_size(std::string_view what) { return static_cast<int64_t>(read_unsigned(what, INT64_MAX)); }

  int64_t read_positive(std::string_view what) {
    const int number_column = column();
    const int64_t value = read_size(what);
    if (value == 0) fail(number_column, fmt::format("{} must be at least 1", what));
    return value;
  }

  // Reads the next option of an operation, `key=` (the '=' included) or one of the `flags` (a bit per key),
  // and returns its index in `keys`. Unknown and repeated options are errors; `given` has a bit per option
  // read so far.
  size_t read_option(const std::vector<std::string>& keys, uint32_t flags, uint32_t& given,
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
    if (!(flags & bit)) expect('=', fmt::format("'=' after '{}'", key), syntax);
    return index;
  }

  void require_options(const std::vector<std::string>& keys, uint32_t given, uint32_t required, int column,
                       std::string_view operation, const char* syntax) {
    for (size_t index = 0; index < keys.size(); ++index)
      if ((required & (1u << index)) && !(given & (1u << index)))
        fail(column, fmt::format("{} is missing '{}='", operation, keys[index]), syntax);
  }

  // ---- scanning the current line

  void skip_blanks() {
    while (position_ < line_.size() && is_blank(line_[position_])) ++position_;
  }
  // Of the next token.
  int column() {
    skip_blanks();
    return static_cast<int>(position_) + 1;
  }
  bool at_line_end() {
    skip_blanks();
    return position_ == line_.size();
  }
  bool at_operation_end() { return at_line_end() || line_[position_] == ';'; }
  bool next_is(char c) {
    skip_blanks();
    return position_ < line_.size() && line_[position_] == c;
  }
  bool next_is_digit() {
    skip_blanks();
    return position_ < line_.size() && is_digit(line_[position_]);
  }
  bool accept(char c) {
    if (!next_is(c)) return false;
    ++position_;
    return true;
  }
  bool accept_arrow() {
    skip_blanks();
    if (line_.compare(position_, 2, "->") != 0) return false;
    position_ += 2;
    return true;
  }
  void expect(char c, std::string_view what, const char* hint) {
    const int symbol_column = column();
    if (!accept(c)) fail_expected(symbol_column, what, hint);
  }
  void expect_arrow(std::string_view what, const char* hint) {
    const int arrow_column = column();
    if (!accept_arrow()) fail_expected(arrow_column, what, hint);
  }
  void expect_line_end(std::string_view after, const char* hint = "") {
    if (!at_line_end()) fail_expected(column(), fmt::format("the end of the line after {}", after), hint);
  }

  template <class Predicate>
  std::string_view scan_run(Predicate belongs) {
    skip_blanks();
    const size_t start = position_;
    while (position_ < line_.size() && belongs(line_[position_])) ++position_;
    return line_.substr(start, position_ - start);
  }
  std::string_view scan_word() { return scan_run(is_word_char); }
  std::string_view scan_free_text() {
    return scan_run([](char c) { return !is_blank(c); });
  }

  // ---- errors

  // "expected <what>, found '<the text at column>'".
  [[noreturn]] void fail_expected(int column, std::string_view what, std::string hint = "") {
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

  [[noreturn]] void fail(int column, std::string message, std::string hint = "") const {
    throw InputError(SourceLocation{program_.source_file, line_number_, column}, field(), std::move(message),
                     std::move(hint));
  }

  // InputError::field: "mesh", "tensor A", "core 0,1", "core 0,1 pe #3" (describe_instruction).
  std::string field() const {
    if (in_instruction_) {
      const CoreProgram& core = program_.cores[static_cast<size_t>(current_core_)];
      if (!queue_) return fmt::format("core {},{}", core.coord.row, core.coord.col);
      Instruction instruction;
      instruction.queue = *queue_;
      const auto position =
          std::count_if(core.instructions.begin(), core.instructions.end(),
                        [&](const Instruction& earlier) { return earlier.queue == *queue_; });
      return describe_instruction(program_, core, instruction, position);
    }
    if (!tensor_name_.empty()) return fmt::format("tensor {}", tensor_name_);
    if (core_line_coord_) return fmt::format("core {},{}", core_line_coord_->row, core_line_coord_->col);
    return std::string(line_subject_);
  }

  std::string_view text_;
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

  // The line each header line first appeared on (0: not yet), and the latest kind seen.
  int header_line_[kHeaderLines] = {};
  HeaderLine last_header_ = HeaderLine::version;
  std::vector<int> tensor_lines_;            // per tensor
  std::unordered_map<int, int> core_lines_;  // core index -> the line of its 'core' line
  int current_core_ = -1;                    // index into program_.cores
  std::unordered_map<std::string, int> semaphore_ids_;
  std::string semaphore_name_;  // reused: most lines name a semaphore or two
};

}  // namespace

Program read_program(const std::string& text, const std::string& file_name) {
  return ProgramReader(text, file_name).read();
}

Program read_program_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(SourceLocation{path, 0, 0}, "",
                     fmt::format("cannot open tile program: {}", std::strerror(errno)),
                     "check the path; 'tessera map' writes tile programs (*.tprog)");
  std::ostringstream text;
  text << in.rdbuf();
  return read_program(text.str(), path);
}

}  // namespace tessera::arch
