#include "ops/op.hpp"

namespace tessera::ops {

namespace {
// Records every field as a value.
class IdentityWriter : public FieldVisitor {
 public:
  explicit IdentityWriter(std::vector<FieldValue>& fields) : fields_(fields) {}
  void integer(const char* name, int64_t& value, IntegerRule, std::optional<int64_t>) override {
    fields_.push_back(FieldValue{name, value, ""});
  }
  void choice(const char* name, int& index, const std::vector<std::string>& names,
              std::optional<int>) override {
    fields_.push_back(FieldValue{name, 0, names.at(static_cast<size_t>(index))});
  }

 private:
  std::vector<FieldValue>& fields_;
};
}  // namespace

std::vector<TensorDesc> tensors_of(const Op& op) {
  return op.kind->tensors(op);
}

OpIdentity identity_of(const Op& op) {
  OpIdentity identity;
  identity.kind = op.kind_name();
  identity.dtype = op.dtype;
  std::any fields = op.fields;  // the walker takes the fields by reference; this one only reads them
  IdentityWriter writer(identity.fields);
  op.kind->visit(fields, writer);
  return identity;
}

std::vector<std::pair<std::string, std::string>> entry_of(const Op& op) {
  std::vector<std::pair<std::string, std::string>> entry = {{"name", op.name}, {"kind", op.kind_name()}};
  for (const FieldValue& field : identity_of(op).fields) entry.emplace_back(field.name, field.text());
  entry.emplace_back("dtype", name_of(op.dtype));
  return entry;
}

}  // namespace tessera::ops
