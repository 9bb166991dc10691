// A mapping of one GEMM onto the machine (DESIGN.md, "Dataflows"): how the work is split over the mesh, the
// per-core SRAM tile and its loop order, buffering, and the PE-array dataflow. A plain value type; the
// mapspace enumerates them, the cost model scores them, lowering turns one into an arch::Program.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "arch/spec.hpp"

namespace tessera::mapper {

enum class Dim : uint8_t { m = 0, n = 1, k = 2 };
const char* name_of(Dim dim);

struct GemmMapping {
  arch::Dataflow dataflow = arch::Dataflow::ws;
  // Cores along each dimension; split_m * split_n * split_k cores are used. A k split reduces partial sums
  // over the NoC.
  int split_m = 1;
  int split_n = 1;
  int split_k = 1;
  // The SRAM tile each core works on at a time (edge tiles are smaller; nothing is padded).
  int64_t tile_m = 0;
  int64_t tile_n = 0;
  int64_t tile_k = 0;
  std::array<Dim, 3> order = {Dim::m, Dim::n, Dim::k};  // tile loops, outermost first
  bool double_buffer_inputs = true;  // two A and two W buffers: the next tile loads while this one computes
  bool double_buffer_output = true;  // two O buffers: a finished tile drains while the next accumulates
  // A grouped conv's groups computed together as one block-diagonal GEMM (1: one group at a time). Set by
  // search_op, not by the mapspace: each packing is its own GemmProblem (problem_of(op, packed)).
  int packed_groups = 1;
  // A convolution mapped as its 7-D loop nest (direct_problem_of): m tiles are output rows, k tiles
  // channels, and the PE runs conv instructions on input tiles with their halo. Set by search_op.
  bool direct = false;

  std::string order_name() const;  // "mnk"
  // The dataflow as reports name it: "ws", or "ws-direct" for a direct conv (RS is always direct: "rs").
  std::string label() const;
  std::string describe() const;  // "ws 4x4x1 256x256x128 mnk db=io"
  bool operator==(const GemmMapping& other) const;
};

std::string dataflow_label(arch::Dataflow dataflow, bool direct);

}  // namespace tessera::mapper
