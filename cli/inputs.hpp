// Loading what the user gave: the machine and workload YAML (shipped defaults when none is named), --set
// overrides routed to the document they patch, and field locations for error messages.
#pragma once

#include <string>
#include <vector>

#include "arch/spec.hpp"
#include "common/config.hpp"
#include "ops/workload.hpp"

namespace tessera::cli {

// Where the shipped configs and GPU records are found, in order: $TESSERA_DATA; an installed layout beside
// the binary (<prefix>/bin/tessera with <prefix>/share/tessera/configs, as `cmake --install` lays it out);
// the checkout this binary was built from. Empty if none holds configs/.
std::string data_root();
std::string default_arch_path();       // configs/arch/default.yaml under data_root()
std::string default_workload_path();   // configs/workloads/default.yaml
std::string default_reference_root();  // traces/reference: recorded GPU references
std::string default_runner_path();     // the GPU reference runner next to this tessera binary

struct MachineInput {
  config::Document document;
  arch::ArchSpec spec;
};

struct WorkloadInput {
  config::Document document;
  ops::Workload workload;
};

// --set paths name a field of the machine (core.sram.kib) or of the workload (ops.ffn1.m, seed); a path may
// start with arch. or workload. to say which, and must when the key exists in both (name).
struct Overrides {
  std::vector<std::string> arch;
  std::vector<std::string> workload;
};
Overrides route_overrides(const std::vector<std::string>& assignments, bool has_workload);

MachineInput load_machine(const std::string& path, const std::vector<std::string>& overrides);
WorkloadInput load_workload(const std::string& path, const std::vector<std::string>& overrides);

// The same from a document read before: a deep copy of it with the overrides applied, so that a file read
// once serves many points of a sweep. YAML::Clone keeps no marks: an error is found again by the loaders
// above, from the file, where it is located.
MachineInput machine_from(const config::Document& read, const std::vector<std::string>& overrides);
WorkloadInput workload_from(const config::Document& read, const std::vector<std::string>& overrides);

// Where a dotted field path is written in a document (the deepest part of the path that exists).
SourceLocation locate_field(const config::Document& document, const std::string& field_path);

}  // namespace tessera::cli
