// The config layer's strict reader (STYLE.md, "Configuration"): every key read is remembered, an unknown key
// is an error with its full field path and a did-you-mean, every error names file:line:column. Together with
// the from_yaml functions of arch/ and ops/, this is the only code that includes yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace tessera::config {

// Fields replaced from the command line (--set a.b=c): field path -> the --set argument, so an error in an
// overridden value points at the argument rather than at the file.
struct Overrides {
  std::map<std::string, std::string> origin_of_field;
};

// A YAML document and where it came from.
struct Document {
  YAML::Node root;
  std::string file;
  std::shared_ptr<Overrides> overrides = std::make_shared<Overrides>();
};

// Reads a YAML file; a missing file or malformed YAML is an InputError naming file:line:column.
Document load_file(const std::string& path);
// Parses YAML text that came from somewhere other than a file (tests, embedded defaults).
Document load_text(const std::string& text, const std::string& name);

// Applies "a.b.c=value" to the document. The value is parsed as YAML (so lists work: dataflows=[ws,os]).
// A numeric segment indexes a list; a non-numeric segment applied to a list selects the element whose
// `name` is that segment (ops.ffn1.m=1024). Absent or empty mappings on the path are created. Errors in an
// overridden value, or in anything inside it, name the --set argument instead of a place in the file.
void apply_override(Document& document, const std::string& assignment);

// Writes a node as block-style YAML text.
std::string to_yaml_text(const YAML::Node& node);

class MapReader {
 public:
  // `node` must be a mapping (a null node reads as an empty mapping when `absent_is_empty`).
  MapReader(const YAML::Node& node, const Document& document, std::string path, bool absent_is_empty = false);

  bool has(const std::string& key) const;

  int64_t integer(const std::string& key);
  int64_t integer(const std::string& key, int64_t fallback);
  int64_t positive_integer(const std::string& key);
  int64_t positive_integer(const std::string& key, int64_t fallback);
  int64_t nonnegative_integer(const std::string& key);
  int64_t nonnegative_integer(const std::string& key, int64_t fallback);
  double number(const std::string& key);
  double number(const std::string& key, double fallback);
  double positive_number(const std::string& key);
  double positive_number(const std::string& key, double fallback);
  double nonnegative_number(const std::string& key, double fallback);
  bool boolean(const std::string& key);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key);
  std::string string(const std::string& key, const std::string& fallback);
  // A string that becomes one component of a path (common/text.hpp, path_name_problem).
  std::string path_name(const std::string& key);
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);
  std::string choice(const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& fallback);
  // A list whose every element is one of `allowed`; duplicates are errors.
  std::vector<std::string> choice_list(const std::string& key, const std::vector<std::string>& allowed,
                                       const std::vector<std::string>& fallback);
  // A non-empty list of integers >= 0 (a moe op's forced per-expert counts); absent: empty.
  std::vector<int64_t> nonnegative_integer_list(const std::string& key);
  // A non-empty list of non-empty strings (a sweep's workload files); each element's place in `locations`.
  std::vector<std::string> string_list(const std::string& key, std::vector<SourceLocation>* locations);

  // The keys as written, in file order (a mapping whose keys are data: a sweep's grid of --set paths).
  std::vector<std::string> keys() const;
  // The value of `key` as YAML, for a reader of free-form values (a sweep axis); the key counts as read.
  YAML::Node node(const std::string& key);
  // Where `mark` is in this document (an element of a value read through node()).
  SourceLocation location_of_mark(const std::string& field, const YAML::Mark& mark) const {
    return location_of(field, mark);
  }

  MapReader map(const std::string& key);
  MapReader map_or_empty(const std::string& key);
  std::vector<MapReader> map_list(const std::string& key);
  // The same with at most `most` elements: more is an error saying so with `hint`, before any is read.
  std::vector<MapReader> map_list(const std::string& key, size_t most, const std::string& hint);

  // Where the value of `key` is (the override argument, the value's mark, or this map's mark if absent).
  SourceLocation location(const std::string& key) const;
  SourceLocation location() const;
  std::string field(const std::string& key) const;
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& key, const std::string& message,
                         const std::string& hint = "") const;

  // Every key of the mapping must have been read: an unknown key is an error with a did-you-mean.
  void finish() const;

 private:
  const YAML::Node& value_of(const std::string& key);
  const YAML::Node& scalar_of(const std::string& key, const char* expected);
  // The --set argument that gave `field` or a field enclosing it, else `mark` in the file.
  SourceLocation location_of(const std::string& field, const YAML::Mark& mark) const;

  YAML::Node node_;
  const Document* document_;
  std::string path_;
  std::vector<std::string> known_keys_;
  std::map<std::string, YAML::Node> values_;
};

}  // namespace tessera::config
