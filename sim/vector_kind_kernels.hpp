// The arithmetic of each VecOp kind in a functional run: the kernel table of the vector unit. arch may not
// include ops (DESIGN.md, "Folders"), so a kind's descriptor (arch/isa/vector_kinds) says which operands it
// reads and how; the vector unit reads them by those roles into VectorOperands, and the kind's kernel here
// (one table line per kind) calls ops' vector kernels on them (docs/design-notes.md, "Vector kinds as data").
#pragma once

#include <cstdint>
#include <vector>

#include "arch/isa/vec_op.hpp"

namespace tessera::sim {

// A VecOp's operands in fp32, each read by its role; empty where the instruction does not read it.
struct VectorOperands {
  std::vector<float> x;           // x_rows() x cols
  std::vector<float> y;           // rows x cols: a chain's tile or a norm's residual
  std::vector<float> g_row;       // 1 x cols: gamma
  std::vector<float> b_row;       // 1 x cols: beta or a chain's bias row
  std::vector<float> statistics;  // statistics_rows() x kRowStatistics, when read
  std::vector<float> weights;     // rows x parts
};

struct VectorResult {
  std::vector<float> out;         // rows x o_cols(), of out_dtype
  std::vector<float> statistics;  // rows x kRowStatistics, written back at g by a kind that updates them
};

// The operands `op` reads from a core's SRAM, by their roles.
VectorOperands read_vector_operands(const uint8_t* sram, const arch::VecOp& op);

// The result of `op` on its operands: the kernel of its kind.
VectorResult compute_vector_result(const VectorOperands& operands, const arch::VecOp& op);

}  // namespace tessera::sim
