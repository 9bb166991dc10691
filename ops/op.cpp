#include "ops/op.hpp"

#include <fmt/format.h>

namespace tessera::ops {

namespace {
// Records every field as a value.
class IdentityWriter : public FieldVisitor {
 public:
  explicit IdentityWriter(std::vector<FieldValue>& fields, std::string prefix = "")
      : fields_(fields), prefix_(std::move(prefix)) {}
  void integer(const char* name, int64_t& value, IntegerRule, std::optional<int64_t> fallback) override {
    FieldValue& field = add(name, FieldValue::Type::integer);
    field.number = value;
    field.is_default = fallback == value;
  }
  void choice(const char* name, int& index, const std::vector<std::string>& names,
              std::optional<int> fallback) override {
    FieldValue& field = add(name, FieldValue::Type::choice);
    field.choice = names.at(static_cast<size_t>(index));
    field.is_default = fallback == index;
  }
  void real(const char* name, double& value, RealRule, std::optional<double> fallback) override {
    FieldValue& field = add(name, FieldValue::Type::real);
    field.real = value;
    field.is_default = fallback == value;
  }
  void choice_list(const char* name, std::vector<int>& indices,
                   const std::vector<std::string>& names) override {
    if (indices.empty()) return;  // an empty list is an absent one: ops without it keep their identity
    FieldValue& field = add(name, FieldValue::Type::list);
    for (int index : indices)
      field.choice += (field.choice.empty() ? "" : "+") + names.at(static_cast<size_t>(index));
  }
  void integer_list(const char* name, std::vector<int64_t>& values) override {
    if (values.empty()) return;  // as a choice list: absent is empty
    FieldValue& field = add(name, FieldValue::Type::list);
    for (int64_t value : values) field.choice += (field.choice.empty() ? "" : "+") + std::to_string(value);
  }
  void group(const char* name, const std::function<void(FieldVisitor&)>& fields) override {
    IdentityWriter inner(fields_, prefix_ + name + ".");
    fields(inner);
  }

 private:
  FieldValue& add(const char* name, FieldValue::Type type) {
    fields_.emplace_back();
    fields_.back().name = prefix_ + name;
    fields_.back().type = type;
    return fields_.back();
  }
  std::vector<FieldValue>& fields_;
  std::string prefix_;  // "kv_cache." inside a group
};
// Names the list fields, a group's as "group.field".
class ListFinder : public FieldVisitor {
 public:
  explicit ListFinder(std::vector<std::string>& lists, std::string prefix = "")
      : lists_(lists), prefix_(std::move(prefix)) {}
  void integer(const char*, int64_t&, IntegerRule, std::optional<int64_t>) override {}
  void choice(const char*, int&, const std::vector<std::string>&, std::optional<int>) override {}
  void real(const char*, double&, RealRule, std::optional<double>) override {}
  void choice_list(const char* name, std::vector<int>&, const std::vector<std::string>&) override {
    lists_.push_back(prefix_ + name);
  }
  void integer_list(const char* name, std::vector<int64_t>&) override { lists_.push_back(prefix_ + name); }
  void group(const char* name, const std::function<void(FieldVisitor&)>& fields) override {
    ListFinder inner(lists_, prefix_ + name + ".");
    fields(inner);
  }

 private:
  std::vector<std::string>& lists_;
  std::string prefix_;
};
}  // namespace

std::vector<std::string> list_fields_of(const OpKind& kind) {
  std::any fields = kind.default_fields();
  std::vector<std::string> lists;
  ListFinder finder(lists);
  kind.visit(fields, finder);
  return lists;
}

std::string FieldValue::text() const {
  switch (type) {
    case Type::integer:
      return std::to_string(number);
    case Type::real:
      return fmt::format("{}", real);  // the shortest text that reads back as the same double
    case Type::choice:
    case Type::list:
      return choice;
  }
  return "";
}

int64_t Op::minimum_dram_bytes() const {
  return kind->minimum_dram_bytes(*this);
}

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

const std::vector<std::string>& boolean_names() {
  static const std::vector<std::string> names = {"false", "true"};
  return names;
}

}  // namespace tessera::ops
