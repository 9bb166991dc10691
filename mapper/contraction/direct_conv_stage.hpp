// The direct convolution stage (docs/design-notes.md, "Direct convolution"): a convolution as its 7-D loop
// nest. Its m counts output rows of q pixels, n filters and k channels (each channel with r*s taps), and
// `groups` = images x conv groups run one after another. A tile of tm output rows reads an input tile of
// input_rows(tm) rows of w pixels (the halo included) straight from X: nothing is gathered or duplicated; the
// PE array runs conv instructions on it (RS as Eyeriss's row-stationary rounds).
//
// With `images` > 1 per tile (a batch's images side by side, as Eyeriss's RS mapping processes several ifmaps
// per filter pass), a tile holds whole images: its m tile is every output row, its A tile the images' whole
// inputs and its O tile their whole outputs (each contiguous in NHWC, so one load and one store), and a tile
// iteration runs one conv instruction per image on the same W tile. A filter tile is then loaded once for
// `images` images: the batch reuse of filters in the buffer, paid for by `images` times the A and O buffers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "mapper/contraction/stage.hpp"

namespace tessera::mapper {

struct DirectConv {
  int64_t images = 1, conv_groups = 1;
  int64_t h = 0, w = 0, c = 0;  // the input (c: all channels, the row length of X)
  int64_t p = 0, q = 0;         // the output
  int64_t r = 1, s = 1, stride = 1, pad = 0, dilation = 1;
  int64_t taps() const { return r * s; }
  // Input rows a tile of `rows` output rows reads at most (the whole input height at most).
  int64_t input_rows(int64_t rows) const { return std::min(h, (rows - 1) * stride + (r - 1) * dilation + 1); }
  // Input rows the tiles of `tile` output rows read from DRAM, summed over one image (padding rows are not
  // read).
  int64_t input_rows_read(int64_t tile) const;
};

class DirectConvStage : public ContractionStage {
 public:
  // `filters` and `channels` per conv group; `images` per tile, a divisor of the batch; `psum` as
  // ContractionShape::psum.
  DirectConvStage(const DirectConv& conv, int64_t filters, int64_t channels, DType dtype, int64_t images = 1,
                  std::optional<DType> psum = std::nullopt, ops::ActivationDensity density = {});
  const DirectConv& conv() const { return conv_; }
  int64_t images_per_tile() const { return images_; }

  const ContractionShape& shape() const override { return shape_; }
  const char* kind() const override { return "direct_conv"; }
  std::string dataflow_label(arch::Dataflow dataflow) const override;
  std::string kind_suffix() const override { return " direct"; }
  std::string form_suffix() const override;
  bool same_stage(const ContractionStage& other) const override;

  Infeasibility obstacle(arch::Dataflow dataflow, const arch::ArchSpec& spec) const override;
  Granules granules(arch::Dataflow dataflow, const arch::ArchSpec& spec) const override;
  bool whole_m() const override { return images_ > 1; }

  // Tiles of several images hold each image's rows one after the other.
  int64_t a_tile_rows(int64_t tm) const override { return conv_.input_rows(tm) * conv_.w * images_; }
  int64_t pixels_per_m() const override { return conv_.q * images_; }
  int64_t taps_per_k() const override { return conv_.taps(); }

  ARowsRead a_rows_read(int64_t tile_m) const override;
  TileRuns runs(int64_t tm, int64_t tn, int64_t tk) const override;
  InstructionProfile profile(const InstructionTimer& timer, arch::Dataflow dataflow, int64_t tm, int64_t tn,
                             int64_t tk) const override;
  arch::PeSramTraffic pe_traffic(arch::Dataflow dataflow, int64_t tm, int64_t tn, int64_t tk,
                                 const arch::ArchSpec& spec) const override;
  double edge_waste(const InstructionTimer& timer, const Mapping& mapping) const override;

  std::array<int, 3> declare_operands(const ops::Op& op, const TensorDeclarer& declarer) const override;
  std::vector<TileLoad> tile_loads(const TileFrame& frame, int tensor, int64_t rows_tile, int64_t cols_tile,
                                   int64_t group) const override;
  int64_t pe_parts() const override { return images_; }
  arch::Operation pe_operation(const TileFrame& frame, const TileIteration& iteration,
                               const PeOperands& operands, int64_t part) const override;
  arch::TensorRegion output_region(const TileFrame& frame, const TileIteration& iteration, int64_t rows,
                                   int64_t cols) const override;

 private:
  // The conv instruction of a tile of tm output rows, tn filters and tk channels.
  arch::ConvTileShape tile_shape(int64_t tm, int64_t tn, int64_t tk) const;
  // The input rows [first, end) a tile of output rows reads (padding rows are not read), and how many padding
  // rows lie above the first.
  struct InputRows {
    int64_t first = 0, end = 0, pad_top = 0;
  };
  InputRows input_rows_of(const DimPartition& rows, int64_t m_tile) const;
  // Where image `part` of a tile's input starts in its A buffer of rows of `row_bytes`: the loads put each
  // image's input rows after the earlier images', and its conv instruction reads them there.
  uint64_t input_slab_offset(const InputRows& in, int64_t part, int64_t row_bytes) const {
    return static_cast<uint64_t>(part * (in.end - in.first) * conv_.w * row_bytes);
  }
  // The outer loop runs blocks of `images_` images x conv groups; a group's first image.
  int64_t image_of(int64_t group) const { return group / conv_.conv_groups * images_; }
  int64_t conv_group_of(int64_t group) const { return group % conv_.conv_groups; }

  DirectConv conv_;
  ContractionShape shape_;
  int64_t images_ = 1;
};

}  // namespace tessera::mapper
