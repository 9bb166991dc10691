// A contraction stage (DESIGN.md, "Operators as stage graphs"): O[m, n] (+)= A[m, k] · W[k, n] on the PE
// array, tiled over its three loops and run `groups` times in a row. The mapspace, the cost model and the
// lowering are the shared machinery of such a tiled contraction (mapspace.cpp, cost_model.cpp,
// lowering.cpp); a stage kind owns what differs — its problem, what its tiles hold, what its instruction
// costs, which regions a tile loads and which PE instruction computes it — behind this interface:
// stages/gemm_stage.hpp (a GEMM, possibly over views of a convolution's operands) and
// stages/direct_conv_stage.hpp (a convolution as its 7-D loop nest). Which stages an op becomes is
// op_stages.hpp's.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "arch/timing/pe_traffic.hpp"
#include "common/dtype.hpp"
#include "mapper/contraction/buffers.hpp"
#include "mapper/form.hpp"
#include "mapper/kit/instruction_timer.hpp"
#include "mapper/kit/tiling.hpp"
#include "mapper/mapping.hpp"
#include "mapper/search.hpp"
#include "ops/density.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

// A contraction's operands.
enum Operand : int { kA = 0, kW = 1, kO = 2 };

// The loops a stage tiles: m, n, k, and the groups run one after another (the outermost loop).
struct ContractionShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::bf16;
  int64_t groups = 1;
  std::optional<DType> psum;  // 16-bit partial sums (the op's `psum`), or the accumulator's type
  DType o_dtype() const { return partial_sum_of(dtype, psum); }  // of the O tiles in SRAM
  ops::ActivationDensity density;  // of A's source and of O, which a coding machine moves coded
};

// The array dimension each loop's tiles align to (0 = streamed, no fold alignment).
struct Granules {
  int64_t m, n, k;
};

// A matmul's granules: the array side each of m, n, k folds onto for `dataflow` (the streamed one aligns to
// the smaller side).
Granules matmul_granules(arch::Dataflow dataflow, const arch::PeArraySpec& pe);

// The longest contiguous runs, in elements, of a tile's rows in DRAM: they set the DMA bursts' sizes.
struct TileRuns {
  int64_t a = 0, w = 0, o = 0;
};

// A's rows read from DRAM for `extent` elements of m: the extent itself, or (a direct conv's input tiles,
// which read their halo and skip padding rows) a share of the `rows_read` of the whole m extent `m`,
// proportional to the extent.
struct ARowsRead {
  bool proportional = false;
  double rows_read = 0;
  int64_t m = 1;
  int64_t of(int64_t extent) const {
    return proportional ? static_cast<int64_t>(std::llround(rows_read * static_cast<double>(extent) / m))
                        : extent;
  }
};

// One iteration of a core's tile loops: global tile indices and the group.
struct TileIteration {
  int64_t m_tile = 0, n_tile = 0, k_tile = 0;
  int64_t group = 0;
};

// One DMA load of a tile: the region and where it lands within the tile's buffer.
struct TileLoad {
  arch::TensorRegion region;
  uint64_t offset = 0;
};

// What the lowering shows a stage of the program it is writing.
struct TileFrame {
  const DimPartition* parts = nullptr;  // m, n, k
  std::array<int, 3> tensors{};         // program tensors of A, W and O
  const BufferPlan* buffers = nullptr;
};

// Where a PE instruction's operands are and how it runs; place_operands fills the fields every PE instruction
// kind has.
struct PeOperands {
  arch::Dataflow dataflow = arch::Dataflow::ws;
  DType dtype = DType::bf16;
  uint64_t a_address = 0, w_address = 0, o_address = 0;
  int64_t a_pitch = 0, w_pitch = 0, o_pitch = 0;  // the buffers' row pitches
  bool accumulate = false;
  std::optional<DType> psum;  // ContractionShape::psum
};

// The text form's pitch: 0 when the rows are packed.
inline int64_t pitch_unless_packed(int64_t pitch, int64_t row_bytes) {
  return pitch == row_bytes ? 0 : pitch;
}

// What a matmul and a conv instruction share: dataflow, dtype, the buffers, their pitches (A rows of
// `a_elements`, W and O rows of `w_elements`) and accumulation.
template <class PeInstruction>
void place_operands(PeInstruction& instruction, const PeOperands& operands, int64_t a_elements,
                    int64_t w_elements) {
  const int64_t element = size_bytes(operands.dtype);
  instruction.dataflow = operands.dataflow;
  instruction.dtype = operands.dtype;
  instruction.a_address = operands.a_address;
  instruction.w_address = operands.w_address;
  instruction.o_address = operands.o_address;
  instruction.a_pitch_bytes = pitch_unless_packed(operands.a_pitch, a_elements * element);
  instruction.w_pitch_bytes = pitch_unless_packed(operands.w_pitch, w_elements * element);
  instruction.o_pitch_bytes = pitch_unless_packed(
      operands.o_pitch, w_elements * size_bytes(partial_sum_of(operands.dtype, operands.psum)));
  instruction.accumulate = operands.accumulate;
  instruction.psum = operands.psum;
}

// How the lowering adds the program's tensors: `add` declares one and returns its index, `declared` makes the
// declaration of one of the op's tensors (ops::tensors_of).
struct TensorDeclarer {
  std::function<int(arch::TensorDecl)> add;
  std::function<arch::TensorDecl(const ops::TensorDesc&)> declared;
};

class ContractionStage;
// The contraction stage a mapping of one maps; reading another form as one is a broken invariant.
const ContractionStage& stage_of(const Mapping& mapping);

class ContractionStage : public Form {
 public:
  // ---- the form (mapper/form.hpp): a contraction's search, estimate (with an unfused epilogue's pass),
  // lowering (mapper/contraction/lowering.cpp), label, description and report fields.
  const char* family() const override { return "contraction"; }
  SearchResult search(const std::shared_ptr<const Form>& self, const arch::ArchSpec& spec,
                      const SearchOptions& options) const override;
  Cost estimate(const Mapping& mapping, const arch::ArchSpec& spec) const override;
  arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec,
                      const std::string& program_name) const override;
  std::string label(const Mapping& mapping) const override { return dataflow_label(mapping.dataflow); }
  std::string describe(const Mapping& mapping) const override;
  NamedValues fields(const Mapping& mapping, const Cost& cost) const override;
  std::string why_loses(const Mapping& loser, const Cost& loser_cost, int64_t loser_cycles,
                        const Mapping& winner, const Cost& winner_cost, int64_t winner_cycles) const override;
  bool same_form(const Form& other) const override;

  virtual const ContractionShape& shape() const = 0;
  // Stages of one kind are searched side by side and their rows merged ("gemm", "direct_conv").
  virtual const char* kind() const = 0;
  // The dataflow as reports name it on this stage ("ws", "ws-direct", "rs").
  virtual std::string dataflow_label(arch::Dataflow dataflow) const = 0;
  // In Mapping::describe: after the dataflow (" direct") and at the end (" pack=4").
  virtual std::string kind_suffix() const { return ""; }
  virtual std::string form_suffix() const { return ""; }
  virtual bool same_stage(const ContractionStage& other) const = 0;
  // Whether the stage kind can run `dataflow` on any shape (a GEMM cannot run row stationary).
  virtual bool can_run(arch::Dataflow dataflow) const { return true; }

  // The multiply-accumulates the PE arrays perform, and those that are the op's own (packed groups multiply
  // zeros too).
  int64_t macs() const {
    const ContractionShape& s = shape();
    return s.m * s.n * s.k * s.groups * pixels_per_m() * taps_per_k();
  }
  virtual int64_t useful_macs() const { return macs(); }

  // ---- mapspace
  // Why the stage cannot run `dataflow` on the machine whatever the tiling (empty message: it can).
  virtual Infeasibility obstacle(arch::Dataflow dataflow, const arch::ArchSpec& spec) const = 0;
  virtual Granules granules(arch::Dataflow dataflow, const arch::ArchSpec& spec) const = 0;
  // Whether its m tile must be the whole of m on one core (tiles of whole images, stacked).
  virtual bool whole_m() const { return false; }

  // ---- what a tile holds: A holds a_tile_rows(tm) rows of tk elements, W tk * taps_per_k() rows of tn, O
  // tm * pixels_per_m() rows of tn.
  virtual int64_t a_tile_rows(int64_t tm) const { return tm; }
  virtual int64_t pixels_per_m() const { return 1; }
  virtual int64_t taps_per_k() const { return 1; }

  // ---- cost
  // How many of A's rows are read from DRAM for a stretch of m, with tiles of `tile_m`.
  virtual ARowsRead a_rows_read(int64_t tile_m) const { return {}; }
  // The share of A's elements that DRAM holds (the rest: padding zeros of a view).
  virtual double a_dram_fraction() const { return 1.0; }
  // W's DRAM bytes are its tiles' over this (packed groups: a block-diagonal view's zeros are not read).
  virtual int64_t w_dram_divisor() const { return 1; }
  virtual TileRuns runs(int64_t tm, int64_t tn, int64_t tk) const = 0;
  // One PE instruction of a tm x tn x tk tile (clipped to the problem).
  virtual InstructionProfile profile(const InstructionTimer& timer, arch::Dataflow dataflow, int64_t tm,
                                     int64_t tn, int64_t tk) const;
  // One PE instruction's SRAM traffic when it starts its output tile's partial sums (an instruction that adds
  // to them reads the tile once more: o_bytes).
  virtual arch::PeSramTraffic pe_traffic(arch::Dataflow dataflow, int64_t tm, int64_t tn, int64_t tk,
                                         const arch::ArchSpec& spec) const = 0;
  // PE slots the mapping's instructions leave idle (ragged edges, folding).
  virtual double edge_waste(const InstructionTimer& timer, const Mapping& mapping) const;

  // ---- lowering
  // Declares the program's tensors for the op's; returns the tensors of A, W and O.
  virtual std::array<int, 3> declare_operands(const ops::Op& op, const TensorDeclarer& declarer) const = 0;
  // The loads of one tile of A (rows: m tile, cols: k tile) or W (rows: k tile, cols: n tile) of `group`.
  virtual std::vector<TileLoad> tile_loads(const TileFrame& frame, int tensor, int64_t rows_tile,
                                           int64_t cols_tile, int64_t group) const = 0;
  // A tile iteration runs pe_parts() PE instructions in turn (a direct conv whose tiles hold several images:
  // one per image), each on its part of the buffers; `part` is which.
  virtual int64_t pe_parts() const { return 1; }
  virtual arch::Operation pe_operation(const TileFrame& frame, const TileIteration& iteration,
                                       const PeOperands& operands, int64_t part) const = 0;
  // Where an output tile of `rows` x `cols` goes in O.
  virtual arch::TensorRegion output_region(const TileFrame& frame, const TileIteration& iteration,
                                           int64_t rows, int64_t cols) const = 0;
};

}  // namespace tessera::mapper
