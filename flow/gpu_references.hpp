// The recorded GPU runs of an op (traces/reference/), matched to it: a record is compared only when it was
// made for this very op (kind, shape, dtype, seed and position in the workload), else it is named with what
// it was made for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/op.hpp"
#include "sim/run_result.hpp"
#include "traces/gpu_record.hpp"
#include "traces/report.hpp"

namespace tessera::flow {

// The recorded GPU runs of an op, and whether each was made for exactly this op.
struct GpuReferences {
  std::vector<traces::GpuComparison> comparisons;
  std::vector<traces::GpuRecord> matched;  // records whose output can be compared with this op's
  std::string note;                        // when none exists
};
// Without `outputs` (a timing-only run) the matched records carry no sampled outputs.
GpuReferences find_gpu_references(const ops::Op& op, uint64_t seed, const std::string& workload,
                                  const std::string& root, bool outputs = true);

// Numerics of a functional run's output tensor against a recorded GPU output's samples.
traces::Numerics check_against_gpu(const ops::Op& op, const traces::GpuRecord& record,
                                   const sim::RunResult& result, int output_tensor);

}  // namespace tessera::flow
