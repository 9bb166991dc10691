// Reading the text form of a tile program (docs/tile-program.md): read_program, read_program_file. The header
// lines, core lines and synchronisation are read here; each operation by its instruction kind
// (instruction_table.hpp), through the line cursor of text_reader.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "arch/isa/program_text.hpp"
#include "arch/isa/syntax.hpp"
#include "arch/isa/text_reader.hpp"
#include "common/files.hpp"
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
    "id=<generator id> [fill=rope_table position=<first token> base=<theta> | fill=values values=<list>] "
    "[density=<non-zero fraction>], or ... output [density=<non-zero fraction>], or tensor <name> <dtype> "
    "<rows>x<cols> view im2col <source> n= h= w= c= r= s= stride= "
    "pad= dilation= groups=, or ... view blockdiag <source> groups= packed= window= group_c= group_k=, or "
    "... view gather <source> rows=<list>";
constexpr const char* kWaitSyntax =
    "waits are written name, name[i], name@row,col or name*count (a_full[0]@0,1*2), separated by blanks";
constexpr const char* kSignalSyntax =
    "signals are written name, name[i] or name@row,col (a_full[0]@0,1), separated by blanks";

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

class ProgramReader : public LineReader {
 public:
  ProgramReader(std::string_view text, const std::string& file_name) : LineReader(file_name), text_(text) {}

  Program read() {
    // A NUL byte would end a name early wherever it is printed or used as a path; names reach reports, which
    // are UTF-8.
    if (const std::string encoding = wide_encoding_of(text_); !encoding.empty())
      fail_at_offset(0, "the file is " + encoding + " text; tessera reads UTF-8",
                     "convert it: iconv -f " + encoding + " -t UTF-8 FILE > NEW.tprog");
    if (const size_t nul = text_.find('\0'); nul != std::string_view::npos)
      fail_at_offset(nul, "the file holds a NUL byte", "a tile program is text: remove the byte");
    if (const size_t bad = invalid_utf8_at(text_); bad != std::string_view::npos)
      fail_at_offset(bad, "the file is not valid UTF-8 here",
                     "a tile program is UTF-8 text: save it as such");
    size_t line_start = 0;
    while (line_start < text_.size()) {
      size_t line_end = text_.find('\n', line_start);
      if (line_end == std::string_view::npos) line_end = text_.size();
      start_line(text_.substr(line_start, line_end - line_start));
      if (!at_line_end()) read_line();
      line_start = line_end + 1;
    }
    finish();
    program_.header_lines.mesh = header_line_[static_cast<int>(HeaderLine::mesh)];
    program_.header_lines.op = header_line_[static_cast<int>(HeaderLine::op)];
    program_.header_lines.tensors = tensor_lines_;
    return std::move(program_);
  }

 private:
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

  [[noreturn]] void fail_at_offset(size_t offset, const std::string& message, const std::string& hint) const {
    const size_t line_start = text_.rfind('\n', offset);
    const int line = 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + offset, '\n'));
    const int at_column =
        static_cast<int>(offset - (line_start == std::string_view::npos ? 0 : line_start + 1)) + 1;
    throw InputError(SourceLocation{program_.source_file, line, at_column}, "", message, hint);
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
      // A field of a group is its path: kv_cache.block_tokens=16.
      std::string key(read_name("an attribute key=value"));
      while (accept('.')) key += "." + std::string(read_name("a field name after '.'"));
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
      static const std::vector<std::string> options = {"density"};
      uint32_t given = 0;
      while (!at_line_end()) {
        read_option(options, 0, given, "an output tensor",
                    "outputs start as zeros; only inputs take seed= and id=");
        tensor.density = read_density();
      }
    } else if (role == "input") {
      read_input_options(tensor, role_column, shape_column);
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

  // The options of an input: the generator's seed= and id=, a fill (fill=rope_table position= base=, or
  // fill=values values=) and density=.
  void read_input_options(TensorDecl& tensor, int role_column, int shape_column) {
    tensor.role = TensorRole::input;
    static const std::vector<std::string> options = {"seed", "id",     "fill",   "position",
                                                     "base", "values", "density"};
    constexpr uint32_t kRopeTableKeys = 0b11000, kValues = 0b100000;
    uint32_t given = 0;
    RopeTableFill table;
    std::string_view fill;
    std::vector<int64_t> values;
    int values_column = 0;
    while (!at_line_end()) {
      const int option_column = column();
      switch (read_option(options, 0, given, "an input tensor", kTensorSyntax)) {
        case 0:
          tensor.seed = read_unsigned("the generator seed");
          break;
        case 1:
          tensor.generator_id = static_cast<uint32_t>(read_unsigned("the generator id", UINT32_MAX));
          break;
        case 2:
          fill = read_fill();
          break;
        case 3:
          table.position = read_size("the position of the table's first token");
          break;
        case 4:
          table.base = read_real("the rope base (theta)");
          if (!(table.base > 1))
            fail(option_column, fmt::format("base must be greater than 1, got {}", table.base));
          break;
        case 5:
          values_column = option_column;
          values = read_values(tensor, option_column);
          break;
        default:
          tensor.density = read_density();
          break;
      }
    }
    require_options(options, given, 0b11, role_column, "an input tensor", kTensorSyntax);
    if (fill == "rope_table") {
      require_options(options, given, 0b11111, role_column, "a rope_table input", kTensorSyntax);
      if (tensor.dtype != DType::fp32 || tensor.cols % 2 != 0)
        fail(shape_column, "a rope table is fp32 with an even number of columns (rotary_dim)",
             "cos in the first half of a row, sin in the second");
      tensor.fill = table;
    } else if (given & kRopeTableKeys) {
      fail(role_column, "position= and base= describe a fill=rope_table input", kTensorSyntax);
    }
    if (fill == "values") {
      require_options(options, given, kValues, role_column, "a fill=values input", kTensorSyntax);
      tensor.fill = ValuesFill{std::move(values)};
    } else if (given & kValues) {
      fail(values_column, "values= lists the elements of a fill=values input",
           "write fill=values values=<list>");
    }
  }

  // `density=`: the fraction of an activation's values that are non-zero, in (0, 1] (ops/density.hpp).
  double read_density() {
    const int value_column = column();
    const double density = read_real("the tensor's density");
    if (!(density > 0 && density <= 1))
      fail(value_column, fmt::format("a density is a fraction of non-zero values in (0, 1], not {}", density),
           "leave density= out for a dense tensor");
    return density;
  }

  // `fill=rope_table` or `fill=values`.
  std::string_view read_fill() {
    std::vector<std::string> fills;
    for_each_kind<Fill>([&](auto kind) { fills.emplace_back(decltype(kind)::type::kKeyword); });
    const int fill_column = column();
    const std::string_view fill = scan_word();
    if (fill.empty()) fail_expected(fill_column, "what fills the input (rope_table or values)");
    if (std::find(fills.begin(), fills.end(), fill) == fills.end())
      fail(fill_column, fmt::format("unknown fill '{}'{}", fill, did_you_mean(std::string(fill), fills)),
           "an input is filled by the generator (no fill=), with a rope table (fill=rope_table) or with the "
           "values the program lists (fill=values)");
    return fill;
  }

  // `values=<list>` of a fill=values input: rows*cols integers that fit its dtype (int8, int32).
  std::vector<int64_t> read_values(const TensorDecl& tensor, int values_column) {
    if (tensor.dtype != DType::int32 && tensor.dtype != DType::int8)
      fail(values_column,
           fmt::format("values= fills int8 and int32 inputs; tensor {} is {}", tensor.name,
                       name_of(tensor.dtype)),
           "the listed values are integers: an index table, an MoE routing's expert indices");
    // The shape's check bounds rows*cols by INT64_MAX.
    const int64_t elements = tensor.rows * tensor.cols;
    if (elements > kMaxListedElements)
      fail(values_column,
           fmt::format("a fill=values input holds at most {} elements; {} is {}x{}", kMaxListedElements,
                       tensor.name, tensor.rows, tensor.cols),
           "larger tables are generated inputs");
    IntegerListRule rule;
    rule.key = "values";
    rule.item = "value";
    rule.noun = "elements";
    rule.count = elements;
    rule.minimum = tensor.dtype == DType::int8 ? INT8_MIN : INT32_MIN;
    rule.maximum = tensor.dtype == DType::int8 ? INT8_MAX : INT32_MAX;
    rule.range_hint =
        fmt::format("an {} element holds {}..{}", name_of(tensor.dtype), rule.minimum, rule.maximum);
    rule.count_hint =
        fmt::format("one value per element of the {}x{} tensor, row by row", tensor.rows, tensor.cols);
    return read_integer_list(rule);
  }

  // `view <kind> <source> key=value...` after the shape: a kind of the views table (views.hpp).
  void read_view(TensorDecl& tensor, int shape_column) {
    tensor.role = TensorRole::view;
    const int kind_column = column();
    const std::string_view kind = scan_word();
    std::vector<std::string> kinds;
    std::string summaries;
    for_each_kind<View>([&](auto view_kind) {
      using Kind = typename decltype(view_kind)::type;
      kinds.push_back(Kind::kKeyword);
      summaries += fmt::format("{}{} ({})",
                               summaries.empty()                           ? ""
                               : kinds.size() == std::variant_size_v<View> ? " and "
                                                                           : ", ",
                               Kind::kKeyword, Kind::kSummary);
    });
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      fail(kind_column,
           kind.empty()
               ? "expected the view kind"
               : fmt::format("unknown view kind '{}'{}", kind, did_you_mean(std::string(kind), kinds)),
           "views are " + summaries);
    const int source_column = column();
    const std::string_view source_name = read_name("the view's source tensor", kTensorSyntax);
    const int source_index = program_.tensor_id(std::string(source_name));
    if (source_index < 0) fail_unknown_tensor(source_column, source_name);
    ViewLine line{source_name, source_index, source_column, shape_column};
    for_each_kind<View>([&](auto view_kind) {
      using Kind = typename decltype(view_kind)::type;
      if (kind == Kind::kKeyword) tensor.view = read_view_of<Kind>(tensor, line);
    });
  }

  // Where a view's tensor line names its source and shape, for its errors.
  struct ViewLine {
    std::string_view source_name;
    int source_index = 0;
    int source_column = 0;
    int shape_column = 0;
  };

  // The source's role and dtype, then the view's fields (its key=value options, as its field list names
  // them) and its fit to the source and the shape (the view's checks).
  template <class Kind>
  Kind read_view_of(const TensorDecl& tensor, const ViewLine& line) {
    const TensorDecl& source = program_.tensors[static_cast<size_t>(line.source_index)];
    if (Kind::kReadsOutputs && source.role == TensorRole::view)
      fail(line.source_column,
           fmt::format("the {} view's source {} is a view", Kind::kKeyword, line.source_name),
           fmt::format("a {} reads the DRAM of an input or of an output written earlier in the program",
                       Kind::kKeyword));
    if (!Kind::kReadsOutputs && source.role != TensorRole::input)
      fail(line.source_column, fmt::format("the view's source {} is not an input tensor", line.source_name),
           "a view reads a generated input");
    if (source.dtype != tensor.dtype)
      fail(line.source_column,
           fmt::format("the view is {} but its source {} is {}", name_of(tensor.dtype), line.source_name,
                       name_of(source.dtype)),
           "a view has its source's element type");
    const ViewFit fit{tensor.rows, tensor.cols, line.source_name, source.rows, source.cols};
    const int options_column = column();
    const auto fail_mismatch = [&](const ViewCheck& mismatch) {
      if (!mismatch) return;
      const int at = mismatch->part == ViewPart::source  ? line.source_column
                     : mismatch->part == ViewPart::shape ? line.shape_column
                                                         : options_column;
      fail(at, mismatch->message, mismatch->hint);
    };
    fail_mismatch(Kind::check_shape(fit));
    Kind view;
    view.source = line.source_index;
    std::vector<std::string> keys;
    Kind::fields([&](const char* key, auto&&...) {
      if (std::string_view(key) != "source") keys.emplace_back(key);
    });
    uint32_t given = 0;
    while (!at_line_end()) {
      const size_t index = read_option(keys, 0, given, Kind::kNoun, kTensorSyntax);
      Kind::fields([&](const char* key, auto member, auto... rule) {
        // The source is read before the options.
        if constexpr (!std::is_same_v<std::decay_t<decltype(view.*member)>, int>)
          if (key == keys[index]) read_view_field<Kind>(view.*member, key, fit, rule...);
      });
    }
    require_options(keys, given, (1u << keys.size()) - 1, options_column, Kind::kNoun, kTensorSyntax);
    fail_mismatch(view.check_fit(fit));
    return view;
  }

  // A view's key=number field: positive, or non-negative where its list says so.
  template <class Kind>
  void read_view_field(int64_t& field, const char* key, const ViewFit&,
                       FieldText rule = FieldText::positive) {
    field = rule == FieldText::non_negative ? read_size(key) : read_positive(key);
  }
  // A view's key=<list> field, as its list_rule says.
  template <class Kind>
  void read_view_field(std::vector<int64_t>& field, const char*, const ViewFit& fit) {
    field = read_integer_list(Kind::list_rule(fit));
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
    const std::vector<std::string>& operations = mnemonics_of(queue.kind);
    if (std::find(operations.begin(), operations.end(), operation) == operations.end())
      fail_unknown_operation(operation_column, operation, queue);
    instruction.operation = read_operation(*this, queue.kind, operation, operation_column);
    read_synchronisation(instruction);
    program_.cores[static_cast<size_t>(current_core_)].instructions.push_back(std::move(instruction));
  }

  void fail_unknown_operation(int column, std::string_view operation, const QueueId& queue) {
    const std::vector<std::string>& operations = mnemonics_of(queue.kind);
    std::string hint = fmt::format("the {} queue runs {}", name_of(queue), join_alternatives(operations));
    if (operation.empty())
      fail_expected(column, fmt::format("an operation for queue {}", name_of(queue)), hint);
    // An operation of another queue (pe load) is a likelier slip than a typo: say where it runs.
    for (QueueKind other : all_queue_kinds()) {
      const std::vector<std::string>& elsewhere = mnemonics_of(other);
      if (other != queue.kind && std::find(elsewhere.begin(), elsewhere.end(), operation) != elsewhere.end())
        hint += fmt::format("; '{}' runs on {}", operation, queues_running(other));
    }
    fail(column,
         fmt::format("unknown operation '{}' for queue {}{}", operation, name_of(queue),
                     did_you_mean(std::string(operation), operations)),
         hint);
  }

  // Before another wait or signal of an instruction that has `count` already.
  void at_most_semaphores(size_t count, const char* what) {
    if (count >= static_cast<size_t>(kMaxSemaphoresPerInstruction))
      fail(column(), fmt::format("more than {} {} on one instruction", kMaxSemaphoresPerInstruction, what),
           "a barrier of every core needs one per core; count repeated signals with '*N' instead");
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
        do {
          at_most_semaphores(instruction.waits.size(), "waits");
          instruction.waits.push_back(read_wait());
        } while (!at_operation_end());
      } else if (section == "signal") {
        if (signals_given)
          fail(section_column, "duplicate '; signal'", "list every signal after one '; signal'");
        signals_given = true;
        do {
          at_most_semaphores(instruction.signals.size(), "signals");
          instruction.signals.push_back(read_signal());
        } while (!at_operation_end());
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

  std::string_view text_;

  // The line each header line first appeared on (0: not yet), and the latest kind seen.
  int header_line_[kHeaderLines] = {};
  HeaderLine last_header_ = HeaderLine::version;
  std::vector<int> tensor_lines_;            // per tensor
  std::unordered_map<int, int> core_lines_;  // core index -> the line of its 'core' line
  std::unordered_map<std::string, int> semaphore_ids_;
  std::string semaphore_name_;  // reused: most lines name a semaphore or two
};

}  // namespace

Program read_program(const std::string& text, const std::string& file_name) {
  return ProgramReader(text, file_name).read();
}

Program read_program_file(const std::string& path) {
  return read_program(
      read_input_file(
          path, FileKind{"a tile program", kMaxProgramBytes,
                         "name a *.tprog file in it; 'tessera map --out DIR' writes them", "tile program",
                         "check the path; 'tessera map' writes tile programs (*.tprog)"}),
      path);
}

}  // namespace tessera::arch
