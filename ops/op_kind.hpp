// What an op kind is (DESIGN.md, "One place per concept"): its fields, declared once in a walker that the
// YAML reader, the text forms and the op's identity all use; its cross-field checks; its tensors; its work
// count; its shape in one line; its CPU reference. One file per kind under ops/kinds/, one line each in
// register_builtins() (ops/kinds/builtins.cpp).
#pragma once

#include <algorithm>
#include <any>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "common/element_fn.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

struct Op;
struct TensorDesc;

enum class IntegerRule : uint8_t { positive, nonnegative };
enum class RealRule : uint8_t { positive, any };

// Visits an op's fields in the order the workload entry lists them. A field without a fallback is required.
class FieldVisitor {
 public:
  virtual ~FieldVisitor() = default;
  virtual void integer(const char* name, int64_t& value, IntegerRule rule,
                       std::optional<int64_t> fallback) = 0;
  // One of `names`; `index` is the position of the value in them.
  virtual void choice(const char* name, int& index, const std::vector<std::string>& names,
                      std::optional<int> fallback) = 0;
  // A finite number (eps, scale).
  virtual void real(const char* name, double& value, RealRule rule, std::optional<double> fallback) = 0;
  // A list of names from `names` without repeats, in the order given (an epilogue chain); absent: empty.
  virtual void choice_list(const char* name, std::vector<int>& indices,
                           const std::vector<std::string>& names) = 0;
  // A list of integers >= 0 (a moe op's forced per-expert counts); absent: empty.
  virtual void integer_list(const char* name, std::vector<int64_t>& values) = 0;
  // A nested mapping of fields (`kv_cache: {layout: paged, block_tokens: 16}`); absent: each at its default.
  // Identities and op lines name its fields "kv_cache.layout".
  virtual void group(const char* name, const std::function<void(FieldVisitor&)>& fields) = 0;
};

// The names of a yes/no choice field (causal, residual): "false", "true" — so its enum lists no first.
const std::vector<std::string>& boolean_names();

// A list field held as enums whose values are the positions of their names.
template <class Enum>
void visit_choice_list(FieldVisitor& visitor, const char* name, std::vector<Enum>& values,
                       const std::vector<std::string>& names) {
  std::vector<int> indices;
  for (Enum value : values) indices.push_back(static_cast<int>(value));
  visitor.choice_list(name, indices, names);
  values.clear();
  for (int index : indices) values.push_back(static_cast<Enum>(index));
}

// A choice field held as an enum whose values are the positions of its names.
template <class Enum>
void visit_choice(FieldVisitor& visitor, const char* name, Enum& value, const std::vector<std::string>& names,
                  std::optional<Enum> fallback = std::nullopt) {
  int index = static_cast<int>(value);
  visitor.choice(name, index, names,
                 fallback ? std::optional<int>(static_cast<int>(*fallback)) : std::optional<int>());
  value = static_cast<Enum>(index);
}

// A choice field of one element function (or a list of them) of a use (common/element_fn.hpp), by name:
// its position in that use's names.
inline void visit_element_fn(FieldVisitor& visitor, const char* name, ElementFn& value, ElementFnUse use) {
  const std::vector<ElementFn>& fns = element_fns(use);
  int index = static_cast<int>(std::find(fns.begin(), fns.end(), value) - fns.begin());
  visitor.choice(name, index, element_fn_names(use), std::nullopt);
  value = fns.at(static_cast<size_t>(index));
}
inline void visit_element_fns(FieldVisitor& visitor, const char* name, std::vector<ElementFn>& values,
                              ElementFnUse use) {
  const std::vector<ElementFn>& fns = element_fns(use);
  std::vector<int> indices;
  for (ElementFn value : values)
    indices.push_back(static_cast<int>(std::find(fns.begin(), fns.end(), value) - fns.begin()));
  visitor.choice_list(name, indices, element_fn_names(use));
  values.clear();
  for (int index : indices) values.push_back(fns.at(static_cast<size_t>(index)));
}

// Where a kind's cross-field checks report a mistake: the field it is about, what is wrong, how to fix it.
class FieldChecks {
 public:
  virtual ~FieldChecks() = default;
  [[noreturn]] virtual void fail(const std::string& field, const std::string& message,
                                 const std::string& hint = "") const = 0;
};

class OpKind {
 public:
  virtual ~OpKind() = default;
  virtual const char* name() const = 0;  // as workloads spell it: "conv2d"
  // The operand types the kind computes on (default: every operand type).
  virtual const std::vector<std::string>& dtype_names() const;
  virtual std::type_index fields_type() const = 0;
  virtual std::any default_fields() const = 0;
  virtual void visit(std::any& fields, FieldVisitor& visitor) const = 0;
  // The rules that involve several fields, and the operand type (each field's own rule is in visit).
  virtual void check(const std::any& fields, DType dtype, const FieldChecks& checks) const = 0;
  // The shape in one line, as reports show it: "512x3072x768".
  virtual std::string shape_text(const std::any& fields) const = 0;
  virtual int64_t macs(const std::any& fields) const = 0;  // multiply-accumulates of the op (0: none)
  // Inputs then outputs, in the order of the op's tensor ids (input_generator.hpp).
  virtual std::vector<TensorDesc> tensors(const Op& op) const = 0;
  // The fewest DRAM bytes any mapping moves: every input read once and the output written once (the
  // tensors' bytes; a kind whose tensors hold more than it must read says less: a paged cache's padding).
  virtual int64_t minimum_dram_bytes(const Op& op) const;
  // The output, row-major, in float64, from the inputs in tensors() order; the result does not depend on
  // `threads`.
  virtual std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs,
                                        int threads) const = 0;
  // The reference at chosen output positions, computed from the generator element by element.
  virtual bool has_sampled_reference() const { return false; }
  virtual std::vector<double> reference_at(const Op& op, uint64_t seed,
                                           const std::vector<int64_t>& positions) const;
};

// An op kind whose fields are a `Fields` value: the type-erased entry points cast and forward.
template <class Fields>
class OpKindOf : public OpKind {
 public:
  std::type_index fields_type() const final { return typeid(Fields); }
  std::any default_fields() const final { return Fields{}; }
  void visit(std::any& fields, FieldVisitor& visitor) const final {
    visit_fields(std::any_cast<Fields&>(fields), visitor);
  }
  void check(const std::any& fields, DType dtype, const FieldChecks& checks) const final {
    check_fields(std::any_cast<const Fields&>(fields), checks);
    check_dtype(std::any_cast<const Fields&>(fields), dtype, checks);
  }
  std::string shape_text(const std::any& fields) const final {
    return text_of(std::any_cast<const Fields&>(fields));
  }
  int64_t macs(const std::any& fields) const final { return macs_of(std::any_cast<const Fields&>(fields)); }

 protected:
  virtual void visit_fields(Fields& fields, FieldVisitor& visitor) const = 0;
  virtual void check_fields(const Fields& fields, const FieldChecks& checks) const {}
  virtual void check_dtype(const Fields& fields, DType dtype, const FieldChecks& checks) const {}
  virtual std::string text_of(const Fields& fields) const = 0;
  virtual int64_t macs_of(const Fields& fields) const = 0;
};

}  // namespace tessera::ops
