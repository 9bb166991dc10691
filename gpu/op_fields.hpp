// The op fields the GPU runner reads, per op kind: the one list of them in the runner. Each kind's file reads
// an op's fields through OpArgs (runner.hpp), which takes a field's default from here and refuses to read a
// field not listed here; tests/ops/gpu_fields_test.cpp checks this list against the op registry (ops/kinds/):
// every field of every kind the runner measures is listed, with the registry's default, or named as one the
// runner does not need and why. So a field added to an op kind fails that test until the runner says what it
// does with it, and no default is spelled twice.
//
// Plain C++17 with no CUDA: the runner (nvcc) and the tests (g++, no toolkit) compile the same file.
#pragma once

#include <string>
#include <vector>

namespace tessera::gpu {

struct RunnerField {
  std::string name;      // as an op line and --op write it: "stride", "kv_cache.layout"
  bool required = true;  // else `fallback` when --op leaves it out
  std::string fallback;  // the default's text: "1", "accumulator", "1e-05", "" (an empty list)
};

struct RunnerKind {
  std::string kind;                   // "conv2d"
  std::vector<RunnerField> fields;    // what the runner reads
  std::vector<std::string> unneeded;  // the kind's fields the runner does not read, each "name: why"
};

// Every kind the runner has paths for (a kind not here is recorded as having no GPU path).
const std::vector<RunnerKind>& runner_kinds();
// The kind's entry, or nullptr.
const RunnerKind* runner_kind(const std::string& kind);
// The kind's field `name`, or nullptr when the runner does not list it.
const RunnerField* runner_field(const std::string& kind, const std::string& name);
// Keys every --op carries whatever its kind: kind, name, index, seed, dtype.
bool is_common_key(const std::string& key);

}  // namespace tessera::gpu
