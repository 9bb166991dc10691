// The mapper's size limits (issue "forms in family rooms", "What must hold"): no function over 120 lines,
// none with more than 7 parameters, no file over 700 lines. A function is counted from the first line of its
// signature to its closing brace, the lambdas and local classes inside it with it. The scanner below reads
// C++ as far as these counts need: comments, string and character literals and preprocessor lines removed,
// then each brace block classed by the text before it (a namespace, a class, struct, union or enum, a
// function body, or an initializer).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace tessera {
namespace {

namespace fs = std::filesystem;

constexpr int kMostFunctionLines = 120;
constexpr int kMostParameters = 7;
constexpr int kMostFileLines = 700;

// `text` with comments, literals and preprocessor lines blanked (newlines kept, so lines still count).
std::string code_of(const std::string& text) {
  std::string code = text;
  enum { plain, line_comment, block_comment, string_literal, char_literal, raw_string } state = plain;
  std::string raw_end;
  bool line_start = true;
  for (size_t i = 0; i < code.size(); ++i) {
    const char c = code[i], next = i + 1 < code.size() ? code[i + 1] : '\0';
    switch (state) {
      case plain:
        if (line_start && c == '#') {  // a preprocessor line, with its continuations
          while (i < code.size() && !(code[i] == '\n' && code[i - 1] != '\\')) code[i++] = ' ';
          break;
        }
        if (c == '/' && next == '/') {
          state = line_comment, code[i] = ' ';
        } else if (c == '/' && next == '*') {
          state = block_comment, code[i] = ' ', code[++i] = ' ';
        } else if (c == 'R' && next == '"') {
          const size_t open = code.find('(', i);
          raw_end = ")" + code.substr(i + 2, open - i - 2) + "\"";
          state = raw_string;
          for (; i < open; ++i) code[i] = ' ';
          code[i] = ' ';
        } else if (c == '"') {
          state = string_literal;
        } else if (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(code[i - 1])))) {
          state = char_literal;  // not a digit separator (1'000)
        }
        break;
      case line_comment:
        if (c == '\n')
          state = plain;
        else
          code[i] = ' ';
        break;
      case block_comment:
        if (c == '*' && next == '/')
          state = plain, code[i] = ' ', code[++i] = ' ';
        else if (c != '\n')
          code[i] = ' ';
        break;
      case string_literal:
      case char_literal:
        if (c == '\\') {
          code[i] = ' ', code[++i] = ' ';
        } else if (c == (state == string_literal ? '"' : '\'')) {
          state = plain;
        } else if (c != '\n') {
          code[i] = ' ';
        }
        break;
      case raw_string:
        if (code.compare(i, raw_end.size(), raw_end) == 0) {
          for (size_t k = 0; k + 1 < raw_end.size(); ++k) code[i + k] = ' ';
          i += raw_end.size() - 1, state = plain;
        } else if (c != '\n') {
          code[i] = ' ';
        }
        break;
    }
    if (state == plain || state == line_comment) line_start = c == '\n' || (line_start && std::isspace(c));
  }
  return code;
}

// The parameters of a function whose head (the text before its body's brace) is `head`: the last top-level
// parenthesised group before an initializer list or trailing qualifiers, split at top-level commas.
int parameters_of(const std::string& head) {
  // Cut a constructor's initializer list: a ':' (not '::') after the first ')'.
  std::string signature = head;
  const size_t first_close = signature.find(')');
  for (size_t i = first_close; i != std::string::npos && i + 1 < signature.size(); ++i)
    if (signature[i] == ':' && signature[i + 1] != ':' && signature[i - 1] != ':') {
      signature.resize(i);
      break;
    }
  const size_t close = signature.rfind(')');
  if (close == std::string::npos) return 0;
  int depth = 0;
  size_t open = close;
  for (size_t i = close + 1; i-- > 0;) {
    if (signature[i] == ')') ++depth;
    if (signature[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  const std::string list = signature.substr(open + 1, close - open - 1);
  if (list.find_first_not_of(" \t\n") == std::string::npos ||
      std::regex_match(list, std::regex(R"(\s*void\s*)")))
    return 0;
  int parameters = 1, nesting = 0;
  for (char c : list) {
    if (c == '(' || c == '<' || c == '{' || c == '[') ++nesting;
    if (c == ')' || c == '>' || c == '}' || c == ']') --nesting;
    if (c == ',' && nesting == 0) ++parameters;
  }
  return parameters;
}

// Whether `head` assigns at its top level (an initializer, `x = {` or `f = [](int a) {`): an '=' outside
// brackets that is no comparison and no operator=.
bool assigns(const std::string& head) {
  int depth = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    const char c = head[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c != '=' || depth != 0) continue;
    const char before = i > 0 ? head[i - 1] : ' ', after = i + 1 < head.size() ? head[i + 1] : ' ';
    if (std::string("=!<>").find(before) != std::string::npos || after == '=') continue;
    const size_t word = head.find_last_not_of(" \t\n", i - 1);
    if (word != std::string::npos && word >= 7 && head.compare(word - 7, 8, "operator") == 0) continue;
    return true;
  }
  return false;
}

struct Function {
  std::string head;
  int first_line = 0, lines = 0, parameters = 0;
};

// Every function body at namespace or class scope of `code` (code_of's form).
std::vector<Function> functions_of(const std::string& code) {
  // inner: a brace inside a head (a default argument's `= {1, 2}`, a member's `y_{a}` in an initializer list)
  enum Block { scope, function, other, inner };
  std::vector<Block> open;
  std::vector<Function> found;
  std::vector<int> starts;  // per open block: the line its head began on
  size_t head_start = 0;
  int line = 1;
  static const std::regex scope_head(R"((^|\W)(namespace|class|struct|union|enum)(\W|$)|extern\s*$)");
  for (size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '\n') ++line;
    const bool in_function = std::find(open.begin(), open.end(), function) != open.end();
    if (c == '{') {
      std::string head = code.substr(head_start, i - head_start);
      const size_t begin = head.find_first_not_of(" \t\n");
      int head_line = line;
      if (begin != std::string::npos) {
        head_line = line - static_cast<int>(std::count(head.begin() + static_cast<std::ptrdiff_t>(begin),
                                                       head.end(), '\n'));
        head = head.substr(begin);
      }
      Block block = other;
      const bool in_head =
          std::count(head.begin(), head.end(), '(') > std::count(head.begin(), head.end(), ')') ||
          std::regex_search(head, std::regex(R"(\)\s*:[^:][\s\S]*[\w,]\s*$)"));
      if (in_head) {
        open.push_back(inner);
        starts.push_back(head_line);
        continue;
      }
      if (!in_function) {
        const bool is_scope = std::regex_search(head, scope_head) && head.find('(') == std::string::npos;
        const bool is_function = !is_scope && head.find(')') != std::string::npos && !assigns(head);
        block = is_scope ? scope : is_function ? function : other;
        if (block == function) found.push_back(Function{head, head_line, 0, parameters_of(head)});
      }
      open.push_back(block);
      starts.push_back(head_line);
      head_start = i + 1;
    } else if (c == '}') {
      if (open.empty()) continue;
      if (open.back() == inner) {
        open.pop_back();
        starts.pop_back();
        continue;
      }
      if (open.back() == function && std::count(open.begin(), open.end(), function) == 1)
        found.back().lines = line - starts.back() + 1;
      open.pop_back();
      starts.pop_back();
      head_start = i + 1;
    } else if (c == ';') {
      head_start = i + 1;
    }
  }
  return found;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string name_of_function(const std::string& head) {
  const size_t paren = head.find('(');
  std::string before = head.substr(0, paren);
  const size_t space = before.find_last_of(" \t\n*&");
  return space == std::string::npos ? before : before.substr(space + 1);
}

TEST(MapperSizeLimits, TheScannerCountsFunctionsParametersAndLinesAsWritten) {
  // (The delimiter is no language's: clang-format would reformat a raw string marked cpp.)
  const std::string code = code_of(R"text(namespace a {
// f(int x) { a comment }
struct S {
  int g(int a, std::function<void(int, int)> b) const { return a; }
};
const char* text = "{ not a block ( }";
int h(int a, int b = f(1, 2),
      std::vector<int> c = {1, 2}) {
  auto l = [](int x) { return x; };
  if (a) {
    return l(b);
  }
  return 0;
}
Foo::Foo(int a) : x_(a), y_{a} {}
bool operator==(const S& a, const S& b) { return true; }
auto k = [](int x) { return x; };
}  // namespace a
)text");
  const std::vector<Function> functions = functions_of(code);
  ASSERT_EQ(functions.size(), 4u);
  EXPECT_EQ(name_of_function(functions[0].head), "g");
  EXPECT_EQ(functions[0].parameters, 2);
  EXPECT_EQ(functions[0].lines, 1);
  EXPECT_EQ(name_of_function(functions[1].head), "h");
  EXPECT_EQ(functions[1].parameters, 3);
  EXPECT_EQ(functions[1].first_line, 7);
  EXPECT_EQ(functions[1].lines, 8);
  EXPECT_EQ(functions[2].parameters, 1);
  EXPECT_EQ(functions[3].parameters, 2);
}

TEST(MapperSizeLimits, NoFunctionOver120LinesOrWithMoreThan7ParametersAndNoFileOver700Lines) {
  const fs::path mapper = fs::path(TESSERA_SOURCE_DIR) / "mapper";
  int files = 0, functions = 0;
  for (const auto& entry : fs::recursive_directory_iterator(mapper)) {
    if (!entry.is_regular_file()) continue;
    const std::string extension = entry.path().extension().string();
    if (extension != ".cpp" && extension != ".hpp") continue;
    ++files;
    const std::string text = read_file(entry.path());
    const std::string where = "mapper/" + fs::relative(entry.path(), mapper).string();
    const auto lines = std::count(text.begin(), text.end(), '\n');
    EXPECT_LE(lines, kMostFileLines) << where << ": " << lines << " lines; split it by concern";
    for (const Function& function : functions_of(code_of(text))) {
      ++functions;
      const std::string name = name_of_function(function.head);
      EXPECT_LE(function.lines, kMostFunctionLines)
          << where << ":" << function.first_line << ": " << name << " has " << function.lines
          << " lines; split it into named steps";
      EXPECT_LE(function.parameters, kMostParameters)
          << where << ":" << function.first_line << ": " << name << " takes " << function.parameters
          << " parameters; group the related ones in a struct";
    }
  }
  EXPECT_GT(files, 40);
  EXPECT_GT(functions, 300);
}

}  // namespace
}  // namespace tessera
