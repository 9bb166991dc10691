// Helpers for tests that drive the stages as a library: load a shipped machine, map one GEMM, lower it, run
// it.
#pragma once

#include <memory>
#include <string>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "mapper/contraction/stage.hpp"
#include "mapper/mapping.hpp"
#include "ops/kinds/conv2d.hpp"
#include "ops/op.hpp"
#include "sim/run_result.hpp"

namespace tessera {

arch::ArchSpec load_arch(const std::string& name);  // configs/arch/<name>.yaml
ops::Op gemm_op(int64_t m, int64_t n, int64_t k, DType dtype);
ops::Op conv_op(const ops::ConvShape& shape, DType dtype);
// The cost model's best mapping of `op` for `dataflow`.
mapper::Mapping best_mapping(const ops::Op& op, const arch::ArchSpec& spec, arch::Dataflow dataflow);
// ... of one of its stages.
mapper::Mapping best_stage_mapping(const std::shared_ptr<const mapper::ContractionStage>& stage,
                                   const arch::ArchSpec& spec, arch::Dataflow dataflow);
// ... of a conv's direct form (the 7-D loop nest).
// `images` per tile (mapper::conv_direct_stage).
mapper::Mapping best_direct_mapping(const ops::Op& op, const arch::ArchSpec& spec, arch::Dataflow dataflow,
                                    int64_t images = 1);
// The same op without its epilogue (the bare contraction, as GPU records made before epilogues measured it).
ops::Op without_epilogue(const ops::Op& op);
// Numerics of a functional run's output against the CPU reference.
bool output_matches_reference(const ops::Op& op, uint64_t seed, const sim::RunResult& result,
                              std::string* detail);

}  // namespace tessera
