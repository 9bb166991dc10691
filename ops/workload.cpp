#include "ops/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "ops/op_registry.hpp"

namespace tessera::ops {

namespace {
// An op's name selects it in --set ops.NAME.m=... (where an all-digit segment is an index instead) and is
// written unquoted into tile programs (op gemm ... name=NAME), so it must be one word.
bool is_op_name(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// Reads a kind's fields from its workload entry, each with its rule and default.
class FieldReader : public FieldVisitor, public FieldChecks {
 public:
  explicit FieldReader(config::MapReader& reader) : reader_(reader) {}
  void integer(const char* name, int64_t& value, IntegerRule rule, std::optional<int64_t> fallback) override {
    if (rule == IntegerRule::positive)
      value = fallback ? reader_.positive_integer(name, *fallback) : reader_.positive_integer(name);
    else
      value = fallback ? reader_.nonnegative_integer(name, *fallback) : reader_.nonnegative_integer(name);
  }
  void choice(const char* name, int& index, const std::vector<std::string>& names,
              std::optional<int> fallback) override {
    const std::string value = fallback ? reader_.choice(name, names, names.at(static_cast<size_t>(*fallback)))
                                       : reader_.choice(name, names);
    index = static_cast<int>(std::find(names.begin(), names.end(), value) - names.begin());
  }
  void real(const char* name, double& value, RealRule rule, std::optional<double> fallback) override {
    if (rule == RealRule::positive)
      value = fallback ? reader_.positive_number(name, *fallback) : reader_.positive_number(name);
    else
      value = fallback ? reader_.number(name, *fallback) : reader_.number(name);
  }
  void choice_list(const char* name, std::vector<int>& indices,
                   const std::vector<std::string>& names) override {
    indices.clear();
    for (const std::string& chosen : reader_.choice_list(name, names, {}))
      indices.push_back(static_cast<int>(std::find(names.begin(), names.end(), chosen) - names.begin()));
  }
  void integer_list(const char* name, std::vector<int64_t>& values) override {
    values = reader_.nonnegative_integer_list(name);
  }
  void group(const char* name, const std::function<void(FieldVisitor&)>& fields) override {
    config::MapReader nested = reader_.map_or_empty(name);
    FieldReader inner(nested);
    fields(inner);
    nested.finish();
  }
  [[noreturn]] void fail(const std::string& field, const std::string& message,
                         const std::string& hint) const override {
    reader_.fail(field, message, hint);
  }

 private:
  config::MapReader& reader_;
};

// Writes a kind's fields into a YAML mapping, integers as integers.
class FieldWriter : public FieldVisitor {
 public:
  explicit FieldWriter(YAML::Node& node) : node_(node) {}
  void integer(const char* name, int64_t& value, IntegerRule, std::optional<int64_t>) override {
    node_[name] = value;
  }
  void choice(const char* name, int& index, const std::vector<std::string>& names,
              std::optional<int>) override {
    node_[name] = names.at(static_cast<size_t>(index));
  }
  void real(const char* name, double& value, RealRule, std::optional<double>) override {
    node_[name] = value;
  }
  void choice_list(const char* name, std::vector<int>& indices,
                   const std::vector<std::string>& names) override {
    if (indices.empty()) return;  // absent is the empty list
    YAML::Node list;
    for (int index : indices) list.push_back(names.at(static_cast<size_t>(index)));
    list.SetStyle(YAML::EmitterStyle::Flow);
    node_[name] = list;
  }
  void integer_list(const char* name, std::vector<int64_t>& values) override {
    if (values.empty()) return;  // absent is the empty list
    YAML::Node list;
    for (int64_t value : values) list.push_back(value);
    list.SetStyle(YAML::EmitterStyle::Flow);
    node_[name] = list;
  }
  void group(const char* name, const std::function<void(FieldVisitor&)>& fields) override {
    YAML::Node nested(YAML::NodeType::Map);
    FieldWriter inner(nested);
    fields(inner);
    nested.SetStyle(YAML::EmitterStyle::Flow);
    node_[name] = nested;
  }

 private:
  YAML::Node& node_;
};

// Every tensor of an op at most kMaxTensorElements, checked once its fields are read: the mapper, the
// lowering and the reference size their work and memory by them.
void check_tensor_sizes(const Op& op, const config::MapReader& reader) {
  const char* hint = "tessera maps an op onto one machine's memory: split the op, or make its sizes smaller";
  // First that no product of its sizes can overflow int64 where the kind forms it (tensors_of, macs): the
  // product of all of them (zeros aside) at most 2^62.
  unsigned __int128 product = 1;
  for (const FieldValue& field : identity_of(op).fields) {
    if (!field.is_integer() || field.number <= 0) continue;
    product *= static_cast<uint64_t>(field.number);
    if (product > (static_cast<unsigned __int128>(1) << 62))
      throw InputError(reader.location(), reader.path(),
                       fmt::format("the sizes of op {} multiply past 2^62 (at {} = {})", op.name, field.name,
                                   field.number),
                       hint);
  }
  for (const TensorDesc& tensor : tensors_of(op)) {
    const bool fits = tensor.rows > 0 && tensor.cols > 0 && tensor.rows <= kMaxTensorElements &&
                      tensor.cols <= kMaxTensorElements / tensor.rows;
    if (fits) continue;
    throw InputError(reader.location(), reader.path(),
                     fmt::format("{} of op {} is {} x {} elements, more than 2^36 ({})", tensor.name, op.name,
                                 tensor.rows, tensor.cols, kMaxTensorElements),
                     hint);
  }
}

}  // namespace

Workload workload_from_yaml(const config::Document& document) {
  config::MapReader top(document.root, document, "");
  Workload workload;
  workload.name = top.path_name("name");
  const int64_t seed = top.nonnegative_integer("seed");
  workload.seed = static_cast<uint64_t>(seed);
  const OpRegistry& registry = op_registry();
  int index = 0;
  std::set<std::string> names;
  for (config::MapReader& reader : top.map_list(
           "ops", kMaxOps, "split the workload into several, each a run of its own (sweeps take a list)")) {
    Op op;
    op.index = index++;
    op.where = reader.location();
    op.name = reader.path_name("name");
    if (!is_op_name(op.name))
      reader.fail("name", fmt::format("'{}' is not a valid op name", op.name),
                  "start with a letter or '_', then use letters, digits, '_' or '-'");
    if (!names.insert(op.name).second)
      reader.fail("name", fmt::format("another op is already named '{}'", op.name),
                  "op names must be unique");
    op.kind = registry.find(reader.choice("kind", registry.names()));
    const std::string dtype = reader.choice("dtype", op.kind->dtype_names());
    op.dtype = *parse_dtype(dtype);
    op.fields = op.kind->default_fields();
    FieldReader fields(reader);
    op.kind->visit(op.fields, fields);
    op.kind->check(op.fields, op.dtype, fields);
    const std::vector<std::string> lists = list_fields_of(*op.kind);
    if (reader.has("epilogue") && std::find(lists.begin(), lists.end(), "epilogue") == lists.end())
      reader.fail(
          "epilogue", fmt::format("a {} takes no epilogue: gemm, fc and conv2d do", op.kind_name()),
          "write the step as an op of its own: kind: elementwise, fn: relu (or gelu, silu, add, ...)");
    reader.finish();
    check_tensor_sizes(op, reader);
    workload.ops.push_back(std::move(op));
  }
  top.finish();
  return workload;
}

YAML::Node to_yaml(const Op& op) {
  YAML::Node node;
  node["name"] = op.name;
  node["kind"] = op.kind_name();
  std::any fields = op.fields;  // the walker takes the fields by reference; this one only reads them
  FieldWriter writer(node);
  op.kind->visit(fields, writer);
  node["dtype"] = name_of(op.dtype);
  node.SetStyle(YAML::EmitterStyle::Flow);
  return node;
}

YAML::Node to_yaml(const Workload& workload) {
  YAML::Node root;
  root["name"] = workload.name;
  root["seed"] = workload.seed;
  for (const Op& op : workload.ops) root["ops"].push_back(to_yaml(op));
  return root;
}

}  // namespace tessera::ops
