#include "ops/workload.hpp"

#include <fmt/format.h>

#include <algorithm>

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
ConvShape conv_from_yaml(config::MapReader& reader) {
  ConvShape conv;
  conv.n = reader.positive_integer("n", 1);
  conv.c = reader.positive_integer("c");
  conv.h = reader.positive_integer("h");
  conv.w = reader.positive_integer("w");
  conv.k = reader.positive_integer("k");
  conv.r = reader.positive_integer("r");
  conv.s = reader.positive_integer("s");
  conv.stride = reader.positive_integer("stride", 1);
  conv.pad = reader.nonnegative_integer("pad", 0);
  conv.dilation = reader.positive_integer("dilation", 1);
  conv.groups = reader.positive_integer("groups", 1);
  if (conv.c % conv.groups != 0)
    reader.fail("groups", fmt::format("{} groups do not divide c = {}", conv.groups, conv.c),
                "each group takes c/groups input channels; depthwise is groups = c");
  if (conv.k % conv.groups != 0)
    reader.fail("groups", fmt::format("{} groups do not divide k = {}", conv.groups, conv.k),
                "each group makes k/groups output channels");
  const int64_t extent_h = conv.dilation * (conv.r - 1) + 1, extent_w = conv.dilation * (conv.s - 1) + 1;
  if (extent_h > conv.h + 2 * conv.pad || extent_w > conv.w + 2 * conv.pad) {
    reader.fail(
        "r",
        fmt::format("the {}x{} filter (dilation {}) spans {}x{}, larger than the padded {}x{} input", conv.r,
                    conv.s, conv.dilation, extent_h, extent_w, conv.h + 2 * conv.pad, conv.w + 2 * conv.pad),
        "use a smaller filter, more padding or a larger input");
  }
  return conv;
}

FcShape fc_from_yaml(config::MapReader& reader) {
  FcShape fc;
  fc.batch = reader.positive_integer("batch", 1);
  fc.inputs = reader.positive_integer("inputs");
  fc.outputs = reader.positive_integer("outputs");
  return fc;
}

PoolShape pool_from_yaml(config::MapReader& reader) {
  PoolShape pool;
  pool.n = reader.positive_integer("n", 1);
  pool.c = reader.positive_integer("c");
  pool.h = reader.positive_integer("h");
  pool.w = reader.positive_integer("w");
  pool.r = reader.positive_integer("r");
  pool.s = reader.positive_integer("s");
  pool.stride = reader.positive_integer("stride", 1);
  pool.pad = reader.nonnegative_integer("pad", 0);
  pool.mode = reader.choice("mode", {"max", "avg"}) == "avg" ? PoolMode::avg : PoolMode::max;
  if (pool.r > pool.h + 2 * pool.pad || pool.s > pool.w + 2 * pool.pad)
    reader.fail("r", fmt::format("the {}x{} window is larger than the padded {}x{} input", pool.r, pool.s,
                                 pool.h + 2 * pool.pad, pool.w + 2 * pool.pad));
  if (2 * pool.pad > std::min(pool.r, pool.s))
    reader.fail("pad", fmt::format("pad {} is more than half the {}x{} window", pool.pad, pool.r, pool.s),
                "a window would see padding only");
  return pool;
}

}  // namespace

const char* Op::kind() const {
  if (std::holds_alternative<ConvShape>(shape)) return "conv2d";
  if (std::holds_alternative<FcShape>(shape)) return "fc";
  if (std::holds_alternative<PoolShape>(shape)) return "pool";
  return "gemm";
}

int64_t Op::gemm_count() const {
  if (const auto* conv = std::get_if<ConvShape>(&shape)) return conv->groups;
  return std::holds_alternative<PoolShape>(shape) ? 0 : 1;
}

GemmShape Op::gemm_view() const {
  if (const auto* conv = std::get_if<ConvShape>(&shape)) return conv->group_gemm();
  if (const auto* fc = std::get_if<FcShape>(&shape)) return fc->gemm();
  TESSERA_ASSERT(std::holds_alternative<GemmShape>(shape), "a pool has no GEMM view");
  return std::get<GemmShape>(shape);
}

std::string Op::shape_text() const {
  if (const auto* conv = std::get_if<ConvShape>(&shape)) {
    std::string text = fmt::format("{}x{}x{}x{} k{} {}x{}/{} p{}", conv->n, conv->h, conv->w, conv->c,
                                   conv->k, conv->r, conv->s, conv->stride, conv->pad);
    if (conv->groups > 1) text += fmt::format(" g{}", conv->groups);
    if (conv->dilation > 1) text += fmt::format(" d{}", conv->dilation);
    return text;
  }
  if (const auto* fc = std::get_if<FcShape>(&shape))
    return fmt::format("{}x{}->{}", fc->batch, fc->inputs, fc->outputs);
  if (const auto* pool = std::get_if<PoolShape>(&shape))
    return fmt::format("{} {}x{}/{} p{} on {}x{}x{}x{}", pool->mode == PoolMode::avg ? "avg" : "max", pool->r,
                       pool->s, pool->stride, pool->pad, pool->n, pool->h, pool->w, pool->c);
  const GemmShape& gemm = std::get<GemmShape>(shape);
  return fmt::format("{}x{}x{}", gemm.m, gemm.n, gemm.k);
}

int64_t Op::macs() const {
  if (std::holds_alternative<PoolShape>(shape)) return 0;
  const GemmShape gemm = gemm_view();
  return gemm.m * gemm.n * gemm.k * gemm_count();
}

const std::vector<std::string>& op_kind_names() {
  static const std::vector<std::string> names = {"gemm", "conv2d", "fc", "pool"};
  return names;
}

std::vector<TensorDesc> tensors_of(const Op& op) {
  const auto index = static_cast<uint32_t>(op.index);
  const DType accumulator = accumulator_of(op.dtype);
  if (const auto* conv = std::get_if<ConvShape>(&op.shape)) {
    return {
        {"X", op.dtype, conv->n * conv->h * conv->w, conv->c, tensor_id(index, 0), false},
        {"W", op.dtype, conv->groups * conv->r * conv->s * conv->group_c(), conv->group_k(),
         tensor_id(index, 1), false},
        {"O", accumulator, conv->n * conv->p() * conv->q(), conv->k, 0, true},
    };
  }
  if (const auto* pool = std::get_if<PoolShape>(&op.shape)) {
    return {
        {"X", op.dtype, pool->n * pool->h * pool->w, pool->c, tensor_id(index, 0), false},
        {"O", accumulator, pool->n * pool->p() * pool->q(), pool->c, 0, true},
    };
  }
  const GemmShape gemm = op.gemm_view();
  return {
      {"A", op.dtype, gemm.m, gemm.k, tensor_id(index, 0), false},
      {"W", op.dtype, gemm.k, gemm.n, tensor_id(index, 1), false},
      {"O", accumulator, gemm.m, gemm.n, 0, true},
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
    if (kind == "conv2d") op.shape = conv_from_yaml(reader);
    if (kind == "fc") op.shape = fc_from_yaml(reader);
    if (kind == "pool") op.shape = pool_from_yaml(reader);
    reader.finish();
    workload.ops.push_back(std::move(op));
  }
  top.finish();
  return workload;
}

YAML::Node to_yaml(const Op& op) {
  YAML::Node node;
  node["name"] = op.name;
  node["kind"] = op.kind();
  if (const auto* gemm = std::get_if<GemmShape>(&op.shape)) {
    node["m"] = gemm->m, node["n"] = gemm->n, node["k"] = gemm->k;
  } else if (const auto* conv = std::get_if<ConvShape>(&op.shape)) {
    node["n"] = conv->n, node["c"] = conv->c, node["h"] = conv->h, node["w"] = conv->w;
    node["k"] = conv->k, node["r"] = conv->r, node["s"] = conv->s, node["stride"] = conv->stride;
    node["pad"] = conv->pad, node["dilation"] = conv->dilation, node["groups"] = conv->groups;
  } else if (const auto* fc = std::get_if<FcShape>(&op.shape)) {
    node["batch"] = fc->batch, node["inputs"] = fc->inputs, node["outputs"] = fc->outputs;
  } else if (const auto* pool = std::get_if<PoolShape>(&op.shape)) {
    node["n"] = pool->n, node["c"] = pool->c, node["h"] = pool->h, node["w"] = pool->w;
    node["r"] = pool->r, node["s"] = pool->s, node["stride"] = pool->stride, node["pad"] = pool->pad;
    node["mode"] = pool->mode == PoolMode::avg ? "avg" : "max";
  }
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
