// The GPU runner's op fields (gpu/op_fields.cpp) against the op registry (ops/kinds/): the runner reads every
// field of every kind it measures, with the registry's default, or names it as one it does not need and why;
// it reads no field the registry lacks. So a field added to an op kind, or a default changed, fails here
// until the runner says what it does with it (issue "forms in family rooms": two commits had fixed drift
// between the runner's 107 string lookups and the registry).
#include <gtest/gtest.h>

#include <algorithm>
#include <any>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gpu/op_fields.hpp"
#include "ops/op_kind.hpp"
#include "ops/op_registry.hpp"

namespace tessera {
namespace {

// A field of the registry: its default's text, or nothing when it is required; lists default to empty.
struct RegistryField {
  enum class Type { integer, choice, real, list } type = Type::integer;
  std::optional<std::string> fallback;
  double real_fallback = 0;
};

class CollectFields : public ops::FieldVisitor {
 public:
  explicit CollectFields(std::string prefix = "") : prefix_(std::move(prefix)) {}
  void integer(const char* name, int64_t&, ops::IntegerRule, std::optional<int64_t> fallback) override {
    add(name, RegistryField::Type::integer,
        fallback ? std::optional<std::string>(std::to_string(*fallback)) : std::nullopt);
  }
  void choice(const char* name, int&, const std::vector<std::string>& names,
              std::optional<int> fallback) override {
    add(name, RegistryField::Type::choice,
        fallback ? std::optional<std::string>(names.at(static_cast<size_t>(*fallback))) : std::nullopt);
  }
  void real(const char* name, double&, ops::RealRule, std::optional<double> fallback) override {
    RegistryField& field =
        add(name, RegistryField::Type::real, fallback ? std::optional<std::string>("") : std::nullopt);
    if (fallback) field.real_fallback = *fallback;
  }
  void choice_list(const char* name, std::vector<int>&, const std::vector<std::string>&) override {
    add(name, RegistryField::Type::list, std::string());
  }
  void integer_list(const char* name, std::vector<int64_t>&) override {
    add(name, RegistryField::Type::list, std::string());
  }
  void group(const char* name, const std::function<void(ops::FieldVisitor&)>& fields) override {
    CollectFields nested(prefix_ + name + ".");
    fields(nested);
    for (auto& [key, field] : nested.fields) this->fields[key] = field;
  }
  std::map<std::string, RegistryField> fields;

 private:
  RegistryField& add(const char* name, RegistryField::Type type, std::optional<std::string> fallback) {
    RegistryField& field = fields[prefix_ + name];
    field.type = type;
    field.fallback = std::move(fallback);
    return field;
  }
  std::string prefix_;
};

std::map<std::string, RegistryField> registry_fields(const ops::OpKind& kind) {
  std::any values = kind.default_fields();
  CollectFields collect;
  kind.visit(values, collect);
  return collect.fields;
}

TEST(GpuRunnerFields, EveryKindTheRunnerMeasuresHasItsFieldsAndDefaultsFromTheRegistry) {
  for (const gpu::RunnerKind& runner : gpu::runner_kinds()) {
    SCOPED_TRACE(runner.kind);
    const ops::OpKind* kind = ops::op_registry().find(runner.kind);
    ASSERT_NE(kind, nullptr) << "the runner measures a kind the registry lacks";
    const std::map<std::string, RegistryField> fields = registry_fields(*kind);
    std::set<std::string> accounted;
    for (const gpu::RunnerField& field : runner.fields) {
      SCOPED_TRACE(field.name);
      EXPECT_TRUE(accounted.insert(field.name).second) << "listed twice";
      const auto found = fields.find(field.name);
      ASSERT_NE(found, fields.end()) << "the runner reads a field the registry does not have";
      const RegistryField& registry = found->second;
      EXPECT_EQ(field.required, !registry.fallback.has_value());
      if (field.required || !registry.fallback) continue;
      if (registry.type == RegistryField::Type::real)
        EXPECT_EQ(std::stod(field.fallback), registry.real_fallback);
      else
        EXPECT_EQ(field.fallback, *registry.fallback);
    }
    for (const std::string& unneeded : runner.unneeded) {
      const std::string name = unneeded.substr(0, unneeded.find(':'));
      EXPECT_NE(unneeded.find(": "), std::string::npos) << unneeded << ": say why";
      EXPECT_TRUE(fields.count(name)) << name << ": not a field of the kind";
      EXPECT_TRUE(accounted.insert(name).second) << name << ": both read and unneeded";
    }
    for (const auto& [name, field] : fields)
      EXPECT_TRUE(accounted.count(name))
          << name << ": a field the runner neither reads nor names as unneeded";
  }
}

TEST(GpuRunnerFields, TheRunnerMeasuresEveryKindButTheCommonKeysAreNoKindsField) {
  // Every kind of the registry has GPU paths today; a new kind without them is recorded as "no GPU path",
  // and is listed here when that is meant.
  const std::set<std::string> without_paths = {};
  for (const std::string& name : ops::op_registry().names())
    EXPECT_TRUE(gpu::runner_kind(name) != nullptr || without_paths.count(name)) << name;
  for (const gpu::RunnerKind& runner : gpu::runner_kinds())
    for (const gpu::RunnerField& field : runner.fields)
      EXPECT_FALSE(gpu::is_common_key(field.name)) << field.name;
}

// Every field the runner's sources read by name (args.get, integer, real; attention's dimension() and
// choice_of()) is a key every --op has or a field the list gives one of the file's kinds: a misspelt or
// unlisted key fails here, not only on a GPU (OpArgs::get fails on one at run time).
TEST(GpuRunnerFields, EveryFieldTheRunnersSourcesReadIsListedForTheirKinds) {
  const std::map<std::string, std::vector<std::string>> kinds_of_file = {
      {"gemm.cu", {"gemm", "fc"}},
      {"epilogue.cu", {"gemm", "fc", "conv2d"}},
      {"conv.cu", {"conv2d"}},
      {"pool.cu", {"pool"}},
      {"vector.cu", {"softmax", "layernorm", "rmsnorm", "elementwise"}},
      {"attention.cu", {"attention"}},
      {"rope.cu", {"rope"}},
      {"moe.cu", {"moe"}},
      {"session.cu", {"gemm", "fc", "conv2d"}}};
  const std::regex read(
      R"re((?:args|op)\.(?:get|integer|real|declares)\("([a-z_.]+)"|dimension\("([a-z_.]+)"\)|choice_of\(args, "([a-z_.]+)")re");
  int reads = 0;
  for (const auto& [file, kinds] : kinds_of_file) {
    std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/gpu/" + file);
    ASSERT_TRUE(in) << file;
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    for (std::sregex_iterator it(source.begin(), source.end(), read), end; it != end; ++it) {
      const std::string key = (*it)[1].matched   ? (*it)[1].str()
                              : (*it)[2].matched ? (*it)[2].str()
                                                 : (*it)[3].str();
      ++reads;
      if (gpu::is_common_key(key)) continue;
      const bool listed = std::any_of(kinds.begin(), kinds.end(), [&](const std::string& kind) {
        return gpu::runner_field(kind, key) != nullptr;
      });
      EXPECT_TRUE(listed) << file << " reads " << key
                          << ", which gpu/op_fields.cpp lists for none of its kinds";
    }
  }
  EXPECT_GT(reads, 80) << "the pattern no longer finds the runner's reads";
}

}  // namespace
}  // namespace tessera
