// One operator of a workload (DESIGN.md: ops/ knows nothing of hardware): its name, its place in the
// workload, its operand dtype, its kind (ops/op_kind.hpp) and the kind's typed field value (a GemmShape, a
// ConvShape,
// ...). What the kind says about it is reached through the kind, never by switching over kinds.
#pragma once

#include <any>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <typeindex>
#include <utility>
#include <vector>

#include "common/dtype.hpp"
#include "common/error.hpp"
#include "ops/op_kind.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

struct Op {
  std::string name;
  int index = 0;  // position in the workload; fixes the tensor ids of its inputs (input_generator.hpp)
  DType dtype = DType::bf16;
  const OpKind* kind = nullptr;
  std::any fields;  // the kind's field value: kind->fields_type()
  SourceLocation where;

  // The fields as the kind's own type, or nullptr when the op is of another kind.
  template <class Fields>
  const Fields* as() const {
    return std::any_cast<Fields>(&fields);
  }
  const char* kind_name() const { return kind->name(); }
  int64_t macs() const { return kind->macs(fields); }  // multiply-accumulates (pool: 0)
  int64_t minimum_dram_bytes() const;                  // OpKind::minimum_dram_bytes
  // The shape in one line: "512x3072x768" (m x n x k), "4x9216->4096" (fc), "4x227x227x3 k96 11x11/4 p0
  // g2" (conv: n x h x w x c, filters, window/stride, pad, groups, dilation), "max 3x3/2 on 4x55x55x96".
  std::string shape_text() const { return kind->shape_text(fields); }
};

// The registered kind whose fields are of `type` (ops/op_registry.cpp).
const OpKind& kind_with_fields(std::type_index type);

// An op of the kind whose fields `fields` are.
template <class Fields>
Op make_op(std::string name, DType dtype, Fields fields, int index = 0) {
  Op op;
  op.name = std::move(name);
  op.index = index;
  op.dtype = dtype;
  op.kind = &kind_with_fields(typeid(Fields));
  op.fields = std::move(fields);
  return op;
}

// The most elements a tensor of an op may have (2^36: 128 GiB in bf16, an H200's memory): the workload
// reader refuses an op with a larger one.
constexpr int64_t kMaxTensorElements = int64_t{1} << 36;

// One input or output tensor of an op, in the order the op's tensor ids use.
struct TensorDesc {
  std::string name;  // "A", "W", "O"
  DType dtype;
  int64_t rows;
  int64_t cols;
  uint32_t tensor_id;  // for inputs; outputs are not generated
  bool is_output;
  std::optional<RopeTableFill> rope_table = std::nullopt;  // an input holding a rope table, not random values
  int64_t index_range =
      0;                 // an int32 index table's indices: into 0 .. index_range - 1 (0: its element count)
  double density = 1.0;  // of an activation's non-zero values (ops/density.hpp): what a coded DMA moves
};

std::vector<TensorDesc> tensors_of(const Op& op);

// One field of an op as a value: an integer field's number, or a choice field's name.
struct FieldValue {
  enum class Type : uint8_t { integer, choice, real, list };
  std::string name;
  Type type = Type::integer;
  int64_t number = 0;
  double real = 0;
  std::string choice;  // a choice's name; a list's names joined by '+' ("bias+gelu"; "" when empty)
  // A choice or integer at its default: what a record made before the field existed computed (not part of
  // equality).
  bool is_default = false;
  bool is_choice() const { return type == Type::choice; }
  bool is_integer() const { return type == Type::integer; }
  // As the runner's --op and a tile program's op line write it: one word, no commas.
  std::string text() const;
  bool operator==(const FieldValue& other) const {
    return name == other.name && type == other.type && number == other.number && real == other.real &&
           choice == other.choice;
  }
  bool operator<(const FieldValue& other) const {
    return std::tie(name, type, number, real, choice) <
           std::tie(other.name, other.type, other.number, other.real, other.choice);
  }
};

// What an op computes, whatever its name and place: two ops with equal identities map, time and compute
// alike on the same inputs (the layer cache's key; what a recorded GPU run must have been made for).
struct OpIdentity {
  std::string kind;
  DType dtype = DType::bf16;
  std::vector<FieldValue> fields;  // in the kind's order
  bool operator==(const OpIdentity& other) const {
    return kind == other.kind && dtype == other.dtype && fields == other.fields;
  }
  bool operator<(const OpIdentity& other) const {
    return std::tie(kind, dtype, fields) < std::tie(other.kind, other.dtype, other.fields);
  }
};
OpIdentity identity_of(const Op& op);

// The op as its workload entry reads, key by key: name, kind, the kind's fields, dtype (the text form of a
// tile program's op line and of the GPU runner's --op). A list field is its names joined by '+'; an empty
// list is left out, as a workload entry may leave it out.
std::vector<std::pair<std::string, std::string>> entry_of(const Op& op);

// The names of a kind's list fields (whose entry text joins names by '+'), a group's as "group.field".
std::vector<std::string> list_fields_of(const OpKind& kind);

}  // namespace tessera::ops
