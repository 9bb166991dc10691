// `tessera sim` as library code: a tile program (written by `tessera map` or by hand) run on a machine, its
// report, and, when the program says which op it computes (its `op` line), its output checked against the
// op's CPU reference.
#pragma once

#include <cstdint>
#include <string>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "ops/op.hpp"
#include "traces/report.hpp"

namespace tessera::flow {

// The workload op a tile program says it computes (its `op` line), read back as a workload entry with the
// workload's own checks; `seed` receives the inputs' seed. Errors name `op_line` of `program_file` (0:
// unknown).
ops::Op op_from_binding(const arch::OpBinding& binding, const std::string& program_file, uint64_t* seed,
                        int op_line = 0);

// The tensors the op line says the program computes with are declared as the op has them: each by its name,
// an input or the output, of the op's dtype and element count (a view with other rows and columns of the same
// count is the same bytes: a bshd cache's K as [tokens, kv_heads * d]). Else the functional run would read or
// write outside a tensor, or the reference would not be the program's (pad=65535 allocated without bound, a
// differently shaped O broke an invariant of the numerics). An index table (ops::TensorDesc::index_range: a
// paged cache's block table, a forced routing's permutation) may be left out: a lowering may hold it in its
// DMA descriptors, as a paged cache's driver does.
void check_op_tensors(const ops::Op& op, const arch::Program& program, const std::string& program_file);

struct ProgramRun {
  traces::Report report;     // host_seconds left to the caller
  std::string chrome_trace;  // when traced
};

ProgramRun simulate_program(const arch::Program& program, const std::string& program_path,
                            const arch::ArchSpec& spec, bool timing_only, bool trace, int threads);

}  // namespace tessera::flow
