// A mapping of one contraction stage onto the machine (DESIGN.md, "Dataflows"): how the work is split over
// the mesh, the per-core SRAM tile and its loop order, buffering, and the PE-array dataflow. A plain value
// type; the mapspace enumerates them, the cost model scores them, lowering turns one into an arch::Program.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "arch/spec.hpp"
#include "common/named_value.hpp"
#include "mapper/epilogue_work.hpp"
#include "mapper/form_choice.hpp"
#include "mapper/stage_graph.hpp"
#include "mapper/tiling.hpp"

namespace tessera::mapper {

class ContractionStage;
struct Cost;
class VectorStage;

struct Mapping {
  // The stage it maps (mapper/stage.hpp): its problem, and how its tiles become instructions.
  std::shared_ptr<const ContractionStage> stage;
  // Or a vector stage (mapper/vector_stage.hpp): its units split over split_m cores in shares of tile_n,
  // streamed through SRAM in blocks of tile_m, double-buffered when double_buffer_inputs.
  std::shared_ptr<const VectorStage> vector_stage;
  // Or a stage graph (mapper/stage_graph.hpp) with its own typed choices (mapper/form_choice.hpp); `dataflow`
  // is its PE stages'.
  std::shared_ptr<const StageGraph> graph;
  FormChoice choice;
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
  // The op's epilogue (mapper/epilogue_work.hpp), and how it runs: fused on each output tile in SRAM (the O
  // buffers then drain through as many epilogue buffers), or unfused as `epilogue_pass`, a mapping of the
  // vector stage over the stored output after a barrier.
  std::shared_ptr<const EpilogueWork> epilogue;
  Fusion fusion = Fusion::none;
  std::shared_ptr<const Mapping> epilogue_pass;
  // A vector stage whose first step another pass may take (a norm of X + R): fused, one instruction reads
  // both tiles; unfused, `prologue_pass` (a map X + R -> T over every core) runs first and after a barrier
  // this mapping's stage normalises T.
  std::shared_ptr<const Mapping> prologue_pass;

  std::string order_name() const;  // "mnk"
  // The dataflow as reports name it: "ws", or the stage's name for it ("ws-direct", "rs").
  std::string label() const;
  // "ws cores 4x4x1 tile 256x256x128 mnk db=io", then " fused bias+gelu" or " unfused bias+gelu, then vec
  // cores 16 ...".
  std::string describe() const;
  // The form's own choices as a report carries them (report.json's `mapping`), "form" first: a contraction's
  // cores, tile, loop order and buffering, and what `cost` (the cost model's, of this mapping) decided of it,
  // its multicast operands and edge waste; a vector pass's cores, rows and blocks; a stage graph's its own
  // (an attention form's q blocks and k/v tiles, an MoE placement's tiles), never another family's zeros.
  NamedValues fields(const Cost& cost) const;
  bool operator==(const Mapping& other) const;
};

}  // namespace tessera::mapper
