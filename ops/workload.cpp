#include "ops/workload.hpp"

#include <fmt/format.h>

#include <cctype>

#include "ops/input_generator.hpp"

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

GemmShape gemm_from_yaml(config::MapReader& reader) {
  GemmShape shape;
  shape.m = reader.positive_integer("m");
  shape.n = reader.positive_integer("n");
  shape.k = reader.positive_integer("k");
  return shape;
}
}  // namespace

const char* Op::kind() const {
  TESSERA_ASSERT(std::holds_alternative<GemmShape>(shape), "every op shape has a kind name");
  return "gemm";
}

int64_t Op::macs() const {
  const auto& gemm = std::get<GemmShape>(shape);
  return gemm.m * gemm.n * gemm.k;
}

const std::vector<std::string>& op_kind_names() {
  static const std::vector<std::string> names = {"gemm"};
  return names;
}

std::vector<TensorDesc> tensors_of(const Op& op) {
  const auto& gemm = std::get<GemmShape>(op.shape);
  const auto index = static_cast<uint32_t>(op.index);
  return {
      {"A", op.dtype, gemm.m, gemm.k, tensor_id(index, 0), false},
      {"W", op.dtype, gemm.k, gemm.n, tensor_id(index, 1), false},
      {"O", accumulator_of(op.dtype), gemm.m, gemm.n, 0, true},
  };
}

Workload workload_from_yaml(const config::Document& document) {
  config::MapReader top(document.root, document, "");
  Workload workload;
  workload.name = top.string("name");
  const int64_t seed = top.nonnegative_integer("seed");
  workload.seed = static_cast<uint64_t>(seed);
  int index = 0;
  for (config::MapReader& reader : top.map_list("ops")) {
    Op op;
    op.index = index++;
    op.where = reader.location();
    op.name = reader.string("name");
    if (!is_op_name(op.name))
      reader.fail("name", fmt::format("'{}' is not a valid op name", op.name),
                  "start with a letter or '_', then use letters, digits, '_' or '-'");
    for (const Op& earlier : workload.ops)
      if (earlier.name == op.name)
        reader.fail("name", fmt::format("another op is already named '{}'", op.name),
                    "op names must be unique");
    const std::string kind = reader.choice("kind", op_kind_names());
    const std::string dtype = reader.choice("dtype", operand_dtype_names());
    op.dtype = *parse_dtype(dtype);
    if (kind == "gemm") op.shape = gemm_from_yaml(reader);
    reader.finish();
    workload.ops.push_back(std::move(op));
  }
  top.finish();
  return workload;
}

YAML::Node to_yaml(const Workload& workload) {
  YAML::Node root;
  root["name"] = workload.name;
  root["seed"] = workload.seed;
  for (const Op& op : workload.ops) {
    YAML::Node node;
    node["name"] = op.name;
    node["kind"] = op.kind();
    const auto& gemm = std::get<GemmShape>(op.shape);
    node["m"] = gemm.m;
    node["n"] = gemm.n;
    node["k"] = gemm.k;
    node["dtype"] = name_of(op.dtype);
    node.SetStyle(YAML::EmitterStyle::Flow);
    root["ops"].push_back(node);
  }
  return root;
}

}  // namespace tessera::ops
