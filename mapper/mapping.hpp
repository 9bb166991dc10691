// A mapping (DESIGN.md, "Mapped forms"): a form (mapper/form.hpp) and its choices — for a contraction stage,
// how the work is split over the mesh, the per-core SRAM tile and its loop order, buffering, and the PE-array
// dataflow; for a vector stage its cores, rows per core and blocks; for other forms their own typed choice.
// A plain value type; a form's search enumerates them, the cost model scores them, the form lowers one into
// an arch::Program.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "arch/spec.hpp"
#include "common/named_value.hpp"
#include "mapper/form.hpp"
#include "mapper/form_choice.hpp"
#include "mapper/kit/epilogue_work.hpp"
#include "mapper/kit/tiling.hpp"

namespace tessera::mapper {

struct Cost;

struct Mapping {
  // The form it maps: a contraction stage (mapper/contraction/stage.hpp: its problem, and how its tiles
  // become instructions); a vector stage (mapper/kit/vector_stage.hpp: its units split over split_m cores in
  // shares of tile_n, streamed through SRAM in blocks of tile_m, double-buffered when double_buffer_inputs);
  // or a form with its own typed choice (mapper/form_choice.hpp), whose PE stages run `dataflow`.
  std::shared_ptr<const Form> form;
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
  // The op's epilogue (mapper/kit/epilogue_work.hpp), and how it runs: fused on each output tile in SRAM (the
  // O buffers then drain through as many epilogue buffers), or unfused as `epilogue_pass`, a mapping of the
  // vector stage over the stored output after a barrier.
  std::shared_ptr<const EpilogueWork> epilogue;
  Fusion fusion = Fusion::none;
  std::shared_ptr<const Mapping> epilogue_pass;
  // A vector stage whose first step another pass may take (a norm of X + R): fused, one instruction reads
  // both tiles; unfused, `prologue_pass` (a map X + R -> T over every core) runs first and after a barrier
  // this mapping's stage normalises T.
  std::shared_ptr<const Mapping> prologue_pass;

  // The form as type F, or nothing where it is not one (a family's own accessor asserts it:
  // mapper/contraction/stage.hpp's stage_of, mapper/kit/vector_stage.hpp's vector_stage_of).
  template <class F>
  const F* form_if() const {
    return dynamic_cast<const F*>(form.get());
  }

  std::string order_name() const;  // "mnk"
  // The row's name in reports: the form's ("ws", "ws-direct", "rs", "vec", "flash ws"), or the dataflow's
  // without a form.
  std::string label() const;
  // The form's one line: "ws cores 4x4x1 tile 256x256x128 mnk db=io", then " fused bias+gelu" or " unfused
  // bias+gelu, then vec cores 16 ...".
  std::string describe() const;
  // The form's own choices as a report carries them (report.json's `mapping`), "form" first: a contraction's
  // cores, tile, loop order and buffering, and what `cost` (the cost model's, of this mapping) decided of it,
  // its multicast operands and edge waste; a vector pass's cores, rows and blocks; an attention form's q
  // blocks and k/v tiles, an MoE placement's tiles; never another family's zeros.
  NamedValues fields(const Cost& cost) const;
  bool operator==(const Mapping& other) const;
};

}  // namespace tessera::mapper
