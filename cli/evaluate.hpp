// One workload op through the whole flow: the mapper scores the mapspace, the best few mappings of each
// dataflow are simulated (timing only) and the fastest wins; each dataflow's best then runs functionally and
// is checked against the CPU reference. Used by `tessera run`.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "arch/program.hpp"
#include "arch/spec.hpp"
#include "mapper/search.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"
#include "traces/gpu_record.hpp"
#include "traces/report.hpp"

namespace tessera::cli {

// Layers of the same shape (ResNet's repeated blocks, MobileNet's) map and time alike: a run keeps each
// shape's search and each simulated program's timing-only result, keyed by the op's fields (its name, index
// and seed aside, which change neither) and the mapping. Timing does not depend on the data, so reuse is
// exact.
struct EvaluationCache {
  std::map<std::string, mapper::SearchResult> searches;
  std::map<std::string, sim::RunResult> timings;
};

struct RunSettings {
  std::vector<arch::Dataflow> dataflows;
  bool timing_only = false;
  bool trace = false;  // record the winners' timelines
  int threads = 1;
  int simulate_top = 3;  // candidates simulated per dataflow
  // A dataflow whose best estimate is more than this many times the op's best estimate is not simulated (the
  // report lists it with its estimate); 0 simulates every dataflow.
  double prune_ratio = 4.0;
  // ... more than this many times, or behind the other form of the same dataflow (a conv's implicit GEMM or
  // direct form): only its best candidate is simulated (the cost model's ranking within a dataflow matters
  // only near the top).
  double narrow_ratio = 1.2;
  std::function<SourceLocation(const std::string& field)> locate_machine_field;
  std::function<void(const std::string&)> progress;  // one line of progress, or nothing
  std::string workload_name;                         // where recorded GPU references are filed
  std::string reference_root;                        // traces/reference of this checkout, or --reference
  EvaluationCache* cache = nullptr;                  // reuse across the ops of one run, or none
};

struct OpOutcome {
  traces::OpRecord record;
  std::vector<std::pair<std::string, arch::Program>> programs;  // file name -> program, per run row
  sim::RunResult winner_result;                                 // with the trace when asked for
  const arch::Program& winner_program() const {
    return programs.at(static_cast<size_t>(record.winner)).second;
  }
};

OpOutcome evaluate_op(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec, sim::Machine& machine,
                      const RunSettings& settings);

// The recorded GPU runs of an op, and whether each was made for exactly this op.
struct GpuReferences {
  std::vector<traces::GpuComparison> comparisons;
  std::vector<traces::GpuRecord> matched;  // records whose output can be compared with this op's
  std::string note;                        // when none exists
};
GpuReferences find_gpu_references(const ops::Op& op, uint64_t seed, const std::string& workload,
                                  const std::string& root);

// Numerics of a functional run's output tensor against a recorded GPU output's samples.
traces::Numerics check_against_gpu(const ops::Op& op, const traces::GpuRecord& record,
                                   const sim::RunResult& result, int output_tensor);

// Numerics of a functional run's output tensor against the op's CPU reference.
traces::Numerics check_against_cpu(const ops::Op& op, const std::vector<double>& reference,
                                   const sim::RunResult& result, int output_tensor);

}  // namespace tessera::cli
