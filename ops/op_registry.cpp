#include "ops/op_registry.hpp"

#include "common/error.hpp"
#include "ops/op.hpp"

namespace tessera::ops {

void OpRegistry::add(std::unique_ptr<OpKind> kind) {
  TESSERA_ASSERT(find(kind->name()) == nullptr, "op kind names are unique");
  names_.emplace_back(kind->name());
  kinds_.push_back(std::move(kind));
}

const OpKind* OpRegistry::find(const std::string& name) const {
  for (const auto& kind : kinds_)
    if (name == kind->name()) return kind.get();
  return nullptr;
}

const OpKind& OpRegistry::with_fields(std::type_index type) const {
  for (const auto& kind : kinds_)
    if (kind->fields_type() == type) return *kind;
  TESSERA_ASSERT(false, "every op field type belongs to a registered kind");
}

const OpRegistry& op_registry() {
  // A function-local static: filled once, thread-safely, on first use, by an explicit call.
  static const OpRegistry registry = [] {
    OpRegistry filled;
    register_builtins(filled);
    return filled;
  }();
  return registry;
}

const OpKind& kind_with_fields(std::type_index type) {
  return op_registry().with_fields(type);
}

std::vector<double> OpKind::reference_at(const Op&, uint64_t, const std::vector<int64_t>&) const {
  TESSERA_ASSERT(false, "reference_at is asked only of kinds with has_sampled_reference()");
}

int64_t OpKind::minimum_dram_bytes(const Op& op) const {
  int64_t bytes = 0;
  for (const TensorDesc& tensor : tensors(op)) bytes += tensor.rows * tensor.cols * size_bytes(tensor.dtype);
  return bytes;
}

const std::vector<std::string>& OpKind::dtype_names() const {
  return operand_dtype_names();
}

}  // namespace tessera::ops
