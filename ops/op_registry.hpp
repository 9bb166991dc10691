// The op kinds a workload may name, by name and by field type (STYLE.md: a registry filled explicitly by
// register_builtins(), no static-initialiser magic that a static library would drop).
#pragma once

#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "ops/op_kind.hpp"

namespace tessera::ops {

class OpRegistry {
 public:
  void add(std::unique_ptr<OpKind> kind);
  const OpKind* find(const std::string& name) const;  // nullptr when no kind has that name
  const OpKind& with_fields(std::type_index type) const;
  const std::vector<std::string>& names() const { return names_; }  // in registration order

 private:
  std::vector<std::unique_ptr<OpKind>> kinds_;
  std::vector<std::string> names_;
};

// Adds the kinds tessera ships (ops/kinds/builtins.cpp): one line per kind.
void register_builtins(OpRegistry& registry);

// The registry of this process, filled by register_builtins() on first use.
const OpRegistry& op_registry();

}  // namespace tessera::ops
