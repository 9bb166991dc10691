#include "common/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include <yaml-cpp/eventhandler.h>

#include "common/files.hpp"
#include "common/text.hpp"

namespace tessera::config {

namespace {

SourceLocation mark_location(const std::string& file, const YAML::Mark& mark) {
  // Only a node tessera made has no mark: the empty mapping that stands for an empty file, whose place is
  // its start.
  if (mark.line < 0) return SourceLocation{file, 1, 1};
  return SourceLocation{file, mark.line + 1, mark.column + 1};
}

// The hints of the type checks, one per expectation, so that every message says how to write the value.
constexpr const char* kIntegerHint =
    "write a whole number: decimal (64) or hexadecimal (0x40), within 64 bits";
constexpr const char* kNumberHint =
    "write a finite decimal number such as 1.5 or 2e3 (.inf and .nan are not numbers)";
constexpr const char* kMappingHint = "write 'key: value' lines indented under it, or {key: value, ...}";
constexpr const char* kListHint = "write a list in brackets, e.g. [a, b], or one '- item' line per element";
constexpr const char* kChoiceHint = "names are case-sensitive; pick one of those listed";

const char* kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "?";
}

// yaml-cpp 0.7 (Debian's) can loop without end, allocating gigabytes, on a line that starts with ',' outside
// any [ ] or { } (`,` alone; `"x"` then `,`; an anchor, then such a line): found by tests/fuzz/config_fuzz,
// e.g. a comment line that lost its '#'. In a config such a line is a mistake (',' separates the elements of
// a flow collection; a plain scalar continued on a line that starts with ',' is the only valid YAML so
// written), so it is refused here, before yaml-cpp sees it. The scan follows quotes, comments, flow brackets
// and block scalars.
void refuse_line_starting_with_comma(const std::string& text, const std::string& name) {
  int flow_depth = 0;
  char quote = 0;                // inside a '...' or "..." scalar
  int block_scalar_indent = -1;  // inside a | or > scalar: the indentation of the line that opened it
  int line = 0;
  for (size_t line_start = 0; line_start < text.size();) {
    ++line;
    const size_t line_end = std::min(text.find('\n', line_start), text.size());
    const std::string_view content(text.data() + line_start, line_end - line_start);
    const size_t first = content.find_first_not_of(" \t\r");
    line_start = line_end + 1;
    if (first == std::string_view::npos) continue;
    const int indent = static_cast<int>(first);
    if (block_scalar_indent >= 0) {
      if (indent > block_scalar_indent) continue;
      block_scalar_indent = -1;
    }
    size_t node = first;  // past a node's anchor and tag (`&a ,` loops as well)
    while (quote == 0 && flow_depth == 0 && node < content.size() &&
           (content[node] == '&' || content[node] == '!')) {
      // A flow indicator ends an anchor; a tag (`!<tag:yaml.org,2002:str>`) may hold one.
      node = content.find_first_of(content[node] == '&' ? " \t,[]{}" : " \t", node);
      node = node == std::string_view::npos ? content.size() : content.find_first_not_of(" \t\r", node);
      if (node == std::string_view::npos) node = content.size();
    }
    // At the first column always: a config's top level is a block mapping, inside which no line of a flow
    // collection starts there; and where this scan's idea of quotes and brackets differs from yaml-cpp's (an
    // unbalanced '"' after 'name:'), that is the place yaml-cpp loops.
    if (((quote == 0 && flow_depth == 0) || node == 0) && node < content.size() && content[node] == ',')
      throw InputError(SourceLocation{name, line, static_cast<int>(node) + 1}, "",
                       "malformed YAML: a line cannot start with ',' outside [ ] or { }",
                       "',' separates the elements of a [list] or a {mapping}; a comment starts with '#'");
    char last = 0;  // the last character outside quotes and comments
    for (size_t at = first; at < content.size(); ++at) {
      const char c = content[at];
      if (quote != 0) {
        if (c == quote && quote == '"' && at > 0 && content[at - 1] == '\\') continue;
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '#' && (at == 0 || content[at - 1] == ' ' || content[at - 1] == '\t')) break;
      if ((c == '"' || c == '\'') &&
          (at == first || std::string_view(" \t[{,:").find(content[at - 1]) != std::string_view::npos))
        quote = c;
      else if (c == '[' || c == '{')
        ++flow_depth;
      else if ((c == ']' || c == '}') && flow_depth > 0)
        --flow_depth;
      if (c != ' ' && c != '\t' && c != '\r') last = c;
    }
    // `key: |`, `- >-`: the more indented lines that follow are the scalar's text.
    if (quote == 0 && flow_depth == 0 &&
        (last == '|' || last == '>' || last == '-' || last == '+' || (last >= '0' && last <= '9'))) {
      const size_t indicator = content.find_last_of("|>");
      if (indicator != std::string_view::npos &&
          content.find_first_not_of("0123456789+- \t\r#", indicator + 1) == std::string_view::npos &&
          (indicator == first || content[indicator - 1] == ' '))
        block_scalar_indent = indent;
    }
  }
}

// The nodes a config may have, counting each time an alias repeats one: ten times what a workload of kMaxOps
// gemm ops has (~20 nodes an op; the largest shipped workload has ~1,000), and a bound on the walk below
// where aliases nest. Counted first as the parser reads (before a tree is built: 14 MB of "1," took 4 GB as
// one), then with each alias's repetitions in the tree.
constexpr int64_t kMostNodes = 2'000'000;

// Thrown by the event pass at the node past kMostNodes.
struct TooManyNodes {
  YAML::Mark mark;
};

// The root of each YAML document: where it starts and whether it is null (an empty document).
class DocumentRoots : public YAML::EventHandler {
 public:
  explicit DocumentRoots(int64_t& nodes) : nodes_(nodes) {}
  bool null = true;
  YAML::Mark mark = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& at, YAML::anchor_t) override { root(at, true); }
  void OnAlias(const YAML::Mark& at, YAML::anchor_t) override { root(at, false); }
  void OnScalar(const YAML::Mark& at, const std::string&, YAML::anchor_t, const std::string&) override {
    root(at, false);
  }
  void OnSequenceStart(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    root(at, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    root(at, false);
  }
  void OnMapEnd() override {}

 private:
  void root(const YAML::Mark& at, bool is_null) {
    if (++nodes_ > kMostNodes) throw TooManyNodes{at};
    if (seen_) return;
    seen_ = true;
    mark = at;
    null = is_null;
  }
  int64_t& nodes_;
  bool seen_ = false;
};

[[noreturn]] void refuse_nodes(const std::string& name, const YAML::Mark& at) {
  throw InputError(mark_location(name, at), "",
                   fmt::format("the document has more than {} nodes (aliases count each time)", kMostNodes),
                   "a config this large is not a machine, workload or sweep tessera reads");
}

// One document (later empty ones aside), read by yaml-cpp's event parser rather than YAML::LoadAll: where
// yaml-cpp 0.7 (Debian's) cannot read past a token at a document's top level (a ',' outside [ ] or { }, found
// by tests/fuzz/config_fuzz after a quoted scalar, an anchor, or at a line's start), LoadAll takes a null
// document there again and again without end, allocating gigabytes (yaml-cpp issue 1040; fixed upstream
// after 0.7). Here the documents' roots must move forward through the text, so the walk ends: a root at or
// before the one before it is that place, and an error there. A second document that is not empty would
// otherwise be dropped without a word (two configs pasted into one file).
void check_one_document(const std::string& text, const std::string& name) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  std::optional<YAML::Mark> second;
  int documents = 0;
  int previous = -1;
  int64_t nodes = 0;
  for (;;) {
    DocumentRoots roots(nodes);
    try {
      if (!parser.HandleNextDocument(roots)) break;
    } catch (const TooManyNodes& past) {
      refuse_nodes(name, past.mark);
    }
    ++documents;
    if (roots.mark.pos <= previous) {
      const auto at = static_cast<size_t>(roots.mark.pos);
      const std::string what =
          at < text.size() && text[at] == ',' ? "a ',' outside [ ] or { }" : "this character";
      throw InputError(mark_location(name, roots.mark), "",
                       "malformed YAML: the parser cannot read past " + what,
                       "',' separates the elements of a [list] or a {mapping}; a comment starts with '#'");
    }
    previous = roots.mark.pos;
    if (documents > 1 && !roots.null && !second) second = roots.mark;
  }
  if (second)
    throw InputError(mark_location(name, *second), "",
                     fmt::format("expected one YAML document, found {}", documents),
                     "a line '---' starts a new document; one file holds one config");
}

// A tag the readers would not honour (`!!binary`, `!custom`) is refused rather than ignored: the value would
// be read as if untagged. Plain and quoted nodes carry "?" and "!"; the core schema's own tags are allowed.
void refuse_unknown_tags(const YAML::Node& root, const std::string& name) {
  static const char* const kCoreTags[] = {"?",
                                          "!",
                                          "",
                                          "tag:yaml.org,2002:str",
                                          "tag:yaml.org,2002:int",
                                          "tag:yaml.org,2002:float",
                                          "tag:yaml.org,2002:bool",
                                          "tag:yaml.org,2002:null",
                                          "tag:yaml.org,2002:map",
                                          "tag:yaml.org,2002:seq"};
  std::vector<YAML::Node> pending = {root};
  int64_t visited = 0;
  while (!pending.empty()) {
    const YAML::Node node = pending.back();
    pending.pop_back();
    if (++visited > kMostNodes) refuse_nodes(name, node.Mark());
    const std::string& tag = node.Tag();
    if (std::find(std::begin(kCoreTags), std::end(kCoreTags), tag) == std::end(kCoreTags))
      throw InputError(mark_location(name, node.Mark()), "", fmt::format("unknown YAML tag '{}'", tag),
                       "remove the tag: tessera reads plain values (numbers, text, lists, mappings)");
    // Children pushed last first, so that the first unknown tag in the document is the one named.
    std::vector<YAML::Node> children;
    if (node.IsMap()) {
      for (auto it = node.begin(); it != node.end(); ++it) {
        children.push_back(it->first);
        children.push_back(it->second);
      }
    } else if (node.IsSequence()) {
      for (auto it = node.begin(); it != node.end(); ++it) children.push_back(*it);
    }
    pending.insert(pending.end(), children.rbegin(), children.rend());
  }
}

Document parse(const std::string& text, const std::string& name) {
  // yaml-cpp reads a raw NUL byte as the end of a scalar or a line break: a name would be cut short or
  // changed without a word.
  if (const std::string encoding = wide_encoding_of(text); !encoding.empty())
    throw InputError(SourceLocation{name, 1, 1}, "", "the file is " + encoding + " text; tessera reads UTF-8",
                     "convert it: iconv -f " + encoding + " -t UTF-8 FILE > NEW.yaml");
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const size_t line_start = text.rfind('\n', nul);
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + nul, '\n'));
    const int column = static_cast<int>(nul - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
    throw InputError(SourceLocation{name, line, column}, "", "the file holds a NUL byte",
                     "a config is text: remove the byte");
  }
  refuse_line_starting_with_comma(text, name);
  Document document;
  document.file = name;
  try {
    check_one_document(text, name);
    document.root = YAML::Load(text);  // the first document alone: one pass of the parser, no loop
  } catch (const YAML::ParserException& error) {
    throw InputError(mark_location(name, error.mark), "", "malformed YAML: " + error.msg,
                     "check the indentation and the brackets around this position");
  }
  if (!document.root || document.root.IsNull()) document.root = YAML::Node(YAML::NodeType::Map);
  refuse_unknown_tags(document.root, name);
  return document;
}

bool is_index(const std::string& segment) {
  return !segment.empty() && segment.find_first_not_of("0123456789") == std::string::npos;
}

// An integer as the YAML 1.2 core schema spells it: decimal (a leading zero does not make it octal), 0x hex
// or 0o octal. False if the text is anything else or does not fit in 64 bits.
bool parse_integer(const std::string& text, int64_t& value) {
  int base = 10;
  std::string digits = text;
  const char* allowed = "0123456789";
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'o')) {
    base = text[1] == 'x' ? 16 : 8;
    digits = text.substr(2);
    allowed = base == 16 ? "0123456789abcdefABCDEF" : "01234567";
  }
  const size_t first_digit = base == 10 && !digits.empty() && (digits[0] == '-' || digits[0] == '+') ? 1 : 0;
  if (digits.size() == first_digit || digits.find_first_not_of(allowed, first_digit) != std::string::npos)
    return false;
  try {
    value = std::stoll(digits, nullptr, base);
  } catch (const std::out_of_range&) {
    return false;
  }
  return true;
}

}  // namespace

Document load_file(const std::string& path) {
  return parse(
      read_input_file(
          path,
          FileKind{"a YAML file", kMaxConfigBytes,
                   "name a file in it; shipped configs are under configs/arch and configs/workloads", "file",
                   "check the path; shipped configs are under configs/arch and configs/workloads"}),
      path);
}

Document load_text(const std::string& text, const std::string& name) {
  return parse(text, name);
}

void apply_override(Document& document, const std::string& assignment) {
  const SourceLocation where{"--set " + assignment, 0, 0};
  const size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw InputError(where, "", "expected key.path=value", "for example --set core.sram.kib=256");
  }
  const std::string path = assignment.substr(0, equals);
  const std::string value_text = assignment.substr(equals + 1);
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::ParserException& error) {
    throw InputError(where, path, "the value is not valid YAML: " + error.msg,
                     "quote the value for the shell; a list is [a, b], a mapping {key: value}");
  }

  std::vector<std::string> segments;
  std::stringstream splitter(path);
  for (std::string segment; std::getline(splitter, segment, '.');) {
    if (segment.empty()) throw InputError(where, path, "empty segment in the key path");
    segments.push_back(segment);
  }

  // Walk with explicit node copies: yaml-cpp nodes are handles, so assigning through them edits the tree.
  YAML::Node current = document.root;
  std::string resolved;  // the field path as the strict reader will name it
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& segment = segments[i];
    const bool last = i + 1 == segments.size();
    if (current.IsSequence()) {
      size_t index = current.size();
      if (is_index(segment)) {
        // An index past the list (or past size_t: 18446744073709551616) selects nothing, said below.
        index = static_cast<size_t>(parse_count(segment).value_or(current.size()));
      } else {
        for (size_t j = 0; j < current.size(); ++j)
          if (current[j].IsMap() && current[j]["name"].IsScalar() && current[j]["name"].Scalar() == segment)
            index = j;
      }
      if (index >= current.size()) {
        throw InputError(where, path,
                         fmt::format("'{}' selects no element of the list {} ({} elements)", segment,
                                     resolved.empty() ? "at the top" : resolved, current.size()),
                         "index from 0, or name an element by its 'name'");
      }
      resolved += fmt::format("[{}]", index);
      if (last) {
        current[index] = value;
      } else {
        YAML::Node next = current[index];
        current.reset(next);
      }
      continue;
    }
    if (!current.IsMap()) {
      throw InputError(where, path, fmt::format("'{}' is {}, not a mapping", resolved, kind_name(current)));
    }
    resolved += resolved.empty() ? segment : "." + segment;
    if (last) {
      current[segment] = value;
    } else {
      // An absent or empty field on the path becomes a mapping, and errors about it name this argument.
      if (!current[segment] || current[segment].IsNull()) {
        current[segment] = YAML::Node(YAML::NodeType::Map);
        document.overrides->origin_of_field[resolved] = "--set " + assignment;
      }
      YAML::Node next = current[segment];
      current.reset(next);
    }
  }
  document.overrides->origin_of_field[resolved] = "--set " + assignment;
}

std::string to_yaml_text(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

MapReader::MapReader(const YAML::Node& node, const Document& document, std::string path, bool absent_is_empty)
    : node_(node), document_(&document), path_(std::move(path)) {
  if ((!node_ || node_.IsNull()) && absent_is_empty) {
    node_ = YAML::Node(YAML::NodeType::Map);
    return;
  }
  if (!node_.IsMap()) {
    throw InputError(location(), path_.empty() ? "(top level)" : path_,
                     fmt::format("expected a mapping of keys to values, got {}", kind_name(node_)),
                     kMappingHint);
  }
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) {
      throw InputError(location_of(path_, it->first.Mark()), path_.empty() ? "(top level)" : path_,
                       fmt::format("expected a key name, got {}", kind_name(it->first)),
                       "keys are field names: letters, digits and '_'");
    }
    const std::string key = it->first.Scalar();
    // yaml-cpp reads a merge key as a plain key named "<<": its fields would silently not be there.
    if (key == "<<" && it->first.Tag() != "!") {
      throw InputError(location_of(field(key), it->first.Mark()), field(key),
                       "YAML merge keys (<<) are not supported",
                       "write the merged fields out in this mapping");
    }
    if (key.find('\0') != std::string::npos || key.empty()) {
      throw InputError(location_of(field(key), it->first.Mark()), path_.empty() ? "(top level)" : path_,
                       "a key is empty or holds a NUL byte", "keys are field names: letters, digits and '_'");
    }
    if (values_.count(key)) {
      throw InputError(location_of(field(key), it->first.Mark()), field(key), "duplicate key",
                       "each key may appear once in a mapping");
    }
    values_.emplace(key, it->second);
  }
}

bool MapReader::has(const std::string& key) const {
  auto it = values_.find(key);
  return it != values_.end() && !it->second.IsNull();
}

std::string MapReader::field(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

SourceLocation MapReader::location_of(const std::string& field, const YAML::Mark& mark) const {
  // A value given by --set, or inside a mapping or list that --set gave, has no place in the file: its marks
  // are positions in the argument's text.
  const auto& origins = document_->overrides->origin_of_field;
  for (std::string enclosing = field; !enclosing.empty();) {
    auto origin = origins.find(enclosing);
    if (origin != origins.end()) return SourceLocation{origin->second, 0, 0};
    const size_t parent_end = enclosing.find_last_of(".[");
    enclosing = parent_end == std::string::npos ? std::string() : enclosing.substr(0, parent_end);
  }
  return mark_location(document_->file, mark);
}

SourceLocation MapReader::location() const {
  return location_of(path_, node_.Mark());
}

SourceLocation MapReader::location(const std::string& key) const {
  auto it = values_.find(key);
  if (it != values_.end()) return location_of(field(key), it->second.Mark());
  // A group's field (kv_cache.blocks): its value inside the group's mapping, where the file writes it.
  const size_t dot = key.find('.');
  const auto group = dot == std::string::npos ? values_.end() : values_.find(key.substr(0, dot));
  if (group == values_.end()) return location();
  YAML::Node node;
  node.reset(group->second);  // rebinds (assignment would write into the document)
  for (size_t at = dot + 1; node.IsMap();) {
    const size_t next = key.find('.', at);
    const YAML::Node& map = node;  // read-only lookup: a missing key is not added
    const YAML::Node child = map[key.substr(at, next == std::string::npos ? std::string::npos : next - at)];
    if (!child) break;
    node.reset(child);
    if (next == std::string::npos) return location_of(field(key), node.Mark());
    at = next + 1;
  }
  return location_of(field(key.substr(0, dot)), group->second.Mark());
}

void MapReader::fail(const std::string& key, const std::string& message, const std::string& hint) const {
  throw InputError(location(key), field(key), message, hint);
}

const YAML::Node& MapReader::value_of(const std::string& key) {
  known_keys_.push_back(key);
  auto it = values_.find(key);
  if (it == values_.end() || it->second.IsNull()) {
    // A key the user wrote that nothing has read, one or two edits from this one and with its first letter,
    // is this key misspelled (bnaks for banks): say so at the typo. The first letter keeps a real sibling
    // (cols, when rows is missing) from being blamed.
    for (auto entry = node_.begin(); entry != node_.end() && it == values_.end(); ++entry) {
      const std::string written = entry->first.Scalar();
      if (std::find(known_keys_.begin(), known_keys_.end(), written) != known_keys_.end()) continue;
      if (written.empty() || written[0] != key[0] || edit_distance(written, key) > 2) continue;
      throw InputError(location_of(field(written), entry->first.Mark()), field(written),
                       "unknown key; did you mean '" + key + "'?", "'" + key + "' is required here");
    }
    // The enclosing map's place (or the --set that emptied the field): yaml-cpp marks an empty value at the
    // token after it, which is another key's line.
    throw InputError(
        location_of(field(key), node_.Mark()), field(key), "required field is missing",
        fmt::format("add '{}:' to {}", key, path_.empty() ? "the top level" : "'" + path_ + "'"));
  }
  return it->second;
}

const YAML::Node& MapReader::scalar_of(const std::string& key, const char* expected) {
  const YAML::Node& value = value_of(key);
  if (!value.IsScalar())
    fail(key, fmt::format("expected {}, got {}", expected, kind_name(value)),
         "write a single value after the key, not a list or a mapping");
  return value;
}

int64_t MapReader::integer(const std::string& key) {
  const std::string text = scalar_of(key, "an integer").Scalar();
  int64_t parsed = 0;
  if (!parse_integer(text, parsed))
    fail(key, fmt::format("expected an integer, got '{}'", text), kIntegerHint);
  return parsed;
}

int64_t MapReader::integer(const std::string& key, int64_t fallback) {
  if (!has(key)) {
    known_keys_.push_back(key);
    return fallback;
  }
  return integer(key);
}

int64_t MapReader::positive_integer(const std::string& key) {
  const int64_t value = integer(key);
  if (value <= 0)
    fail(key, fmt::format("expected a positive integer, got {}", value),
         "this field counts or sizes something: at least 1");
  return value;
}

int64_t MapReader::positive_integer(const std::string& key, int64_t fallback) {
  return has(key) ? positive_integer(key) : integer(key, fallback);
}

int64_t MapReader::nonnegative_integer(const std::string& key) {
  const int64_t value = integer(key);
  if (value < 0)
    fail(key, fmt::format("expected an integer >= 0, got {}", value),
         "this field is a count or an offset: 0 or more");
  return value;
}

int64_t MapReader::nonnegative_integer(const std::string& key, int64_t fallback) {
  return has(key) ? nonnegative_integer(key) : integer(key, fallback);
}

double MapReader::number(const std::string& key) {
  const YAML::Node& value = scalar_of(key, "a number");
  const std::string text = value.Scalar();
  size_t consumed = 0;
  double parsed = 0;
  try {
    parsed = std::stod(text, &consumed);
  } catch (const std::exception&) {
    consumed = 0;
  }
  // std::stod also reads "inf" and "nan", which no field of a machine or a workload can mean.
  if (consumed != text.size() || text.empty() || !std::isfinite(parsed))
    fail(key, fmt::format("expected a number, got '{}'", text), kNumberHint);
  return parsed;
}

double MapReader::number(const std::string& key, double fallback) {
  if (!has(key)) {
    known_keys_.push_back(key);
    return fallback;
  }
  return number(key);
}

double MapReader::positive_number(const std::string& key) {
  const double value = number(key);
  if (!(value > 0))
    fail(key, fmt::format("expected a positive number, got {}", value),
         "this field is a rate or a size: above 0");
  return value;
}

double MapReader::positive_number(const std::string& key, double fallback) {
  return has(key) ? positive_number(key) : number(key, fallback);
}

double MapReader::nonnegative_number(const std::string& key, double fallback) {
  const double value = number(key, fallback);
  if (!(value >= 0))
    fail(key, fmt::format("expected a number >= 0, got {}", value),
         "this field is a cost or a size: 0 or more");
  return value;
}

bool MapReader::boolean(const std::string& key) {
  const YAML::Node& value = scalar_of(key, "true or false");
  const std::string text = value.Scalar();
  if (text == "true") return true;
  if (text == "false") return false;
  fail(key, fmt::format("expected true or false, got '{}'", text),
       "write true or false (yes, on and 1 are not booleans here)");
}

bool MapReader::boolean(const std::string& key, bool fallback) {
  if (!has(key)) {
    known_keys_.push_back(key);
    return fallback;
  }
  return boolean(key);
}

std::string MapReader::string(const std::string& key) {
  std::string value = scalar_of(key, "a string").Scalar();
  // A NUL byte (a quoted "\0") would cut the name short wherever it is printed or used as a path.
  if (value.find('\0') != std::string::npos)
    fail(key, "the text holds a NUL byte", "names and paths are printable text");
  // Names reach reports (JSON is UTF-8), traces and paths: refused here, not when a writer meets them.
  if (!is_valid_utf8(value)) fail(key, "the text is not valid UTF-8", "save the file as UTF-8");
  return value;
}

std::string MapReader::path_name(const std::string& key) {
  std::string value = string(key);
  if (const std::string problem = path_name_problem(value); !problem.empty())
    fail(key, "the name " + problem,
         fmt::format("it names files and folders (GPU records, tile programs): use at most {} bytes, no '/', "
                     "no control characters, not '.' or '..'",
                     kMaxPathNameBytes));
  return value;
}

std::string MapReader::string(const std::string& key, const std::string& fallback) {
  if (!has(key)) {
    known_keys_.push_back(key);
    return fallback;
  }
  return string(key);
}

std::string MapReader::choice(const std::string& key, const std::vector<std::string>& allowed) {
  const std::string value = string(key);
  for (const auto& option : allowed)
    if (value == option) return value;
  fail(
      key,
      fmt::format("'{}' is not one of {}{}", value, join_alternatives(allowed), did_you_mean(value, allowed)),
      kChoiceHint);
}

std::string MapReader::choice(const std::string& key, const std::vector<std::string>& allowed,
                              const std::string& fallback) {
  if (!has(key)) {
    known_keys_.push_back(key);
    return fallback;
  }
  return choice(key, allowed);
}

std::vector<int64_t> MapReader::nonnegative_integer_list(const std::string& key) {
  if (!has(key)) {
    known_keys_.push_back(key);
    return {};
  }
  const YAML::Node& value = value_of(key);
  if (!value.IsSequence())
    fail(key, fmt::format("expected a list of integers, got {}", kind_name(value)), kListHint);
  std::vector<int64_t> numbers;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string element_field = fmt::format("{}[{}]", field(key), i);
    const SourceLocation where = location_of(element_field, value[i].Mark());
    int64_t parsed = 0;
    if (!value[i].IsScalar() || !parse_integer(value[i].Scalar(), parsed) || parsed < 0)
      throw InputError(
          where, element_field,
          fmt::format("expected an integer >= 0, got {}",
                      value[i].IsScalar() ? "'" + value[i].Scalar() + "'" : std::string(kind_name(value[i]))),
          "each element is a whole number, 0 or more");
    numbers.push_back(parsed);
  }
  if (numbers.empty()) fail(key, "expected at least one element", "leave the key out to take its default");
  return numbers;
}

std::vector<std::string> MapReader::string_list(const std::string& key,
                                                std::vector<SourceLocation>* locations) {
  const YAML::Node& value = value_of(key);
  if (!value.IsSequence()) fail(key, fmt::format("expected a list, got {}", kind_name(value)));
  std::vector<std::string> strings;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string element_field = fmt::format("{}[{}]", field(key), i);
    const SourceLocation where = location_of(element_field, value[i].Mark());
    if (!value[i].IsScalar() || value[i].Scalar().empty() ||
        value[i].Scalar().find('\0') != std::string::npos)
      throw InputError(where, element_field,
                       "expected a non-empty string, got " + std::string(kind_name(value[i])));
    strings.push_back(value[i].Scalar());
    if (locations) locations->push_back(where);
  }
  if (strings.empty()) fail(key, "expected at least one element");
  return strings;
}

std::vector<std::string> MapReader::keys() const {
  std::vector<std::string> names;
  for (auto it = node_.begin(); it != node_.end(); ++it) names.push_back(it->first.Scalar());
  return names;
}

YAML::Node MapReader::node(const std::string& key) {
  return value_of(key);
}

std::vector<std::string> MapReader::choice_list(const std::string& key,
                                                const std::vector<std::string>& allowed,
                                                const std::vector<std::string>& fallback) {
  if (!has(key)) {
    known_keys_.push_back(key);
    return fallback;
  }
  const YAML::Node& value = value_of(key);
  if (!value.IsSequence()) fail(key, fmt::format("expected a list, got {}", kind_name(value)), kListHint);
  std::vector<std::string> chosen;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string element_field = fmt::format("{}[{}]", field(key), i);
    const SourceLocation where = location_of(element_field, value[i].Mark());
    if (!value[i].IsScalar())
      throw InputError(where, element_field, "expected a name, got " + std::string(kind_name(value[i])),
                       kChoiceHint);
    const std::string text = value[i].Scalar();
    bool known = false;
    for (const auto& option : allowed) known = known || option == text;
    if (!known) {
      throw InputError(where, element_field,
                       fmt::format("'{}' is not one of {}{}", text, join_alternatives(allowed),
                                   did_you_mean(text, allowed)),
                       kChoiceHint);
    }
    for (const auto& earlier : chosen)
      if (earlier == text)
        throw InputError(where, element_field, fmt::format("'{}' is listed twice", text),
                         "list each name once");
    chosen.push_back(text);
  }
  if (chosen.empty()) fail(key, "expected at least one element", "leave the key out to take its default");
  return chosen;
}

MapReader MapReader::map(const std::string& key) {
  return MapReader(value_of(key), *document_, field(key));
}

MapReader MapReader::map_or_empty(const std::string& key) {
  known_keys_.push_back(key);
  auto it = values_.find(key);
  if (it == values_.end()) return MapReader(YAML::Node(), *document_, field(key), /*absent_is_empty=*/true);
  return MapReader(it->second, *document_, field(key), /*absent_is_empty=*/true);
}

std::vector<MapReader> MapReader::map_list(const std::string& key) {
  return map_list(key, std::numeric_limits<size_t>::max(), "");
}

std::vector<MapReader> MapReader::map_list(const std::string& key, size_t most, const std::string& hint) {
  const YAML::Node& value = value_of(key);
  if (value.IsSequence() && value.size() > most)
    fail(key, fmt::format("{} elements, more than tessera reads here ({})", value.size(), most), hint);
  if (!value.IsSequence()) fail(key, fmt::format("expected a list, got {}", kind_name(value)), kListHint);
  if (value.size() == 0)
    fail(key, "expected at least one element", "an empty list describes nothing: add an element");
  std::vector<MapReader> elements;
  for (size_t i = 0; i < value.size(); ++i)
    elements.emplace_back(value[i], *document_, fmt::format("{}[{}]", field(key), i));
  return elements;
}

void MapReader::finish() const {
  // In file order, so that the error names the first unknown key the user wrote; it points at the key itself.
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (std::find(known_keys_.begin(), known_keys_.end(), key) != known_keys_.end()) continue;
    throw InputError(location_of(field(key), it->first.Mark()), field(key),
                     "unknown key" + did_you_mean(key, known_keys_),
                     "the README lists every field of this file");
  }
}

}  // namespace tessera::config
