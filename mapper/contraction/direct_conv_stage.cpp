#include "mapper/contraction/direct_conv_stage.hpp"

#include <fmt/format.h>

#include <cmath>

#include "arch/timing/rs_timing.hpp"

namespace tessera::mapper {

int64_t DirectConv::input_rows_read(int64_t tile) const {
  int64_t rows = 0;
  for (int64_t first = 0; first < p; first += tile) {
    const int64_t last = std::min(p, first + tile) - 1;
    const int64_t top = std::max<int64_t>(0, first * stride - pad);
    const int64_t bottom = std::min(h, last * stride - pad + (r - 1) * dilation + 1);
    rows += std::max<int64_t>(1, bottom - top);
  }
  return rows;
}

DirectConvStage::DirectConvStage(const DirectConv& conv, int64_t filters, int64_t channels, DType dtype,
                                 int64_t images, std::optional<DType> psum, ops::ActivationDensity density)
    : conv_(conv),
      shape_{conv.p, filters, channels, dtype, conv.images / images * conv.conv_groups, psum, density},
      images_(images) {
  TESSERA_ASSERT(images >= 1 && conv.images % images == 0, "a tile's images divide the batch");
}

std::string DirectConvStage::form_suffix() const {
  return images_ > 1 ? fmt::format(" images={}", images_) : std::string();
}

std::string DirectConvStage::dataflow_label(arch::Dataflow dataflow) const {
  const std::string name = arch::name_of(dataflow);
  return dataflow == arch::Dataflow::rs ? name : name + "-direct";
}

bool DirectConvStage::same_stage(const ContractionStage& other) const {
  const auto* direct = dynamic_cast<const DirectConvStage*>(&other);
  return direct != nullptr && direct->images_ == images_;
}

Infeasibility DirectConvStage::obstacle(arch::Dataflow dataflow, const arch::ArchSpec& spec) const {
  if (dataflow != arch::Dataflow::rs) return {};
  const std::string why = arch::rs_infeasibility(spec, shape_.dtype, conv_.s);
  return why.empty() ? Infeasibility{} : Infeasibility{"core.pe_spad_bytes", why};
}

// WS/OS/IS fold the matmul of pixels x filters x taps*channels, so the matmul's granules are divided by the
// pixels of a row and the taps of a channel. RS fills the array's columns with output rows, and a PE with the
// filters and channels its scratchpads interleave.
Granules DirectConvStage::granules(arch::Dataflow dataflow, const arch::ArchSpec& spec) const {
  if (dataflow == arch::Dataflow::rs) {
    const int64_t rows = std::min<int64_t>(shape_.m, spec.core.pe_array.cols);
    const arch::RsPlan plan =
        arch::RsTiming(spec).plan(arch::ConvTileShape{rows, conv_.q, shape_.n, shape_.k, conv_.r, conv_.s,
                                                      conv_.input_rows(rows), conv_.w},
                                  shape_.dtype);
    return {rows, plan.filters_per_pe, plan.channels_per_pe};
  }
  const Granules matmul = matmul_granules(dataflow, spec.core.pe_array);
  return {std::max<int64_t>(1, matmul.m / conv_.q), matmul.n, std::max<int64_t>(1, matmul.k / conv_.taps())};
}

ARowsRead DirectConvStage::a_rows_read(int64_t tile_m) const {
  // The tiles read their input rows with the halo and no padding rows.
  return ARowsRead{true, static_cast<double>(conv_.input_rows_read(tile_m) * conv_.w * images_), shape_.m};
}

TileRuns DirectConvStage::runs(int64_t tm, int64_t tn, int64_t tk) const {
  TileRuns runs;
  // The input tile is one run when it holds every channel of its pixels, else a run per pixel; a W tile of
  // every filter is one run, an O tile of every output channel too.
  runs.a = tk == conv_.c ? conv_.input_rows(tm) * conv_.w * tk : tk;  // an image's rows at least
  runs.w = tn == shape_.n ? tk * conv_.taps() * tn : tn;
  runs.o = tn == shape_.n && conv_.conv_groups == 1 ? tm * pixels_per_m() * tn : tn;
  return runs;
}

arch::ConvTileShape DirectConvStage::tile_shape(int64_t tm, int64_t tn, int64_t tk) const {
  return arch::ConvTileShape{tm, conv_.q, tn, tk, conv_.r, conv_.s, conv_.input_rows(tm), conv_.w};
}

InstructionProfile DirectConvStage::profile(const InstructionTimer& timer, arch::Dataflow dataflow,
                                            int64_t tm, int64_t tn, int64_t tk) const {
  if (dataflow == arch::Dataflow::rs)
    return timer.row_stationary(tile_shape(tm, tn, tk), shape_.dtype)->profile;
  // One image's instruction: the matmul of its pixels by the taps of the tile's channels.
  return timer.matmul(dataflow, tm * conv_.q, tn, tk * conv_.taps());
}

arch::PeSramTraffic DirectConvStage::pe_traffic(arch::Dataflow dataflow, int64_t tm, int64_t tn, int64_t tk,
                                                const arch::ArchSpec& spec) const {
  return arch::conv_sram_traffic(dataflow, shape_.dtype, shape_.o_dtype(), tile_shape(tm, tn, tk), false,
                                 spec);
}

double DirectConvStage::edge_waste(const InstructionTimer& timer, const Mapping& mapping) const {
  if (mapping.dataflow != arch::Dataflow::rs) return ContractionStage::edge_waste(timer, mapping);
  return timer
      .row_stationary(tile_shape(std::min(mapping.tile_m, shape_.m), std::min(mapping.tile_n, shape_.n),
                                 std::min(mapping.tile_k, shape_.k)),
                      shape_.dtype)
      ->edge_waste;
}

std::array<int, 3> DirectConvStage::declare_operands(const ops::Op& op,
                                                     const TensorDeclarer& declarer) const {
  const std::vector<ops::TensorDesc> tensors = ops::tensors_of(op);
  std::array<int, 3> operand{};
  operand[kA] = declarer.add(declarer.declared(tensors[0]));
  operand[kW] = declarer.add(declarer.declared(tensors[1]));
  operand[kO] = declarer.add(declarer.declared(tensors.back()));  // O is the last (after an epilogue's)
  return operand;
}

DirectConvStage::InputRows DirectConvStage::input_rows_of(const DimPartition& rows, int64_t m_tile) const {
  const DirectConv& d = conv_;
  const int64_t p0 = rows.tile_begin(m_tile), count = rows.tile_size(m_tile);
  const int64_t top = p0 * d.stride - d.pad;
  InputRows in;
  in.first = std::clamp<int64_t>(top, 0, d.h - 1);
  in.end = std::min(d.h, (p0 + count - 1) * d.stride - d.pad + (d.r - 1) * d.dilation + 1);
  in.end = std::max(in.end, in.first + 1);  // a tile wholly in the padding still loads (and ignores) a row
  in.pad_top = in.first - top;
  return in;
}

std::vector<TileLoad> DirectConvStage::tile_loads(const TileFrame& frame, int tensor, int64_t rows_tile,
                                                  int64_t cols_tile, int64_t group) const {
  const DirectConv& d = conv_;
  const DimPartition& rows = frame.parts[tensor == kA ? 0 : 2];
  const DimPartition& cols = frame.parts[tensor == kA ? 2 : 1];
  const int64_t image = image_of(group), conv_group = conv_group_of(group);
  if (tensor == kA) {
    // The input tile: whole rows of the image (every pixel, the halo rows included), the tile's channels;
    // with several images, each one's whole input, one after the other as X holds them.
    const InputRows in = input_rows_of(rows, rows_tile);
    const int64_t input_rows = in.end - in.first;
    const int64_t col = conv_group * shape_.k + cols.tile_begin(cols_tile),
                  channels = cols.tile_size(cols_tile);
    TESSERA_ASSERT(images_ == 1 || in.first == 0, "a tile of several images holds each from its first row");
    // Whole images lie one after the other in X: one load. An image whose last rows no output reads (a stride
    // that leaves them out) is loaded apart, its slab right after the previous image's.
    if (images_ == 1 || input_rows == d.h)
      return {{arch::TensorRegion{frame.tensors[kA], (image * d.h + in.first) * d.w,
                                  input_rows * d.w * images_, col, channels},
               0}};
    std::vector<TileLoad> loads;
    for (int64_t part = 0; part < images_; ++part)
      loads.push_back(
          {arch::TensorRegion{frame.tensors[kA], (image + part) * d.h * d.w, input_rows * d.w, col, channels},
           input_slab_offset(in, part, frame.buffers->a_row_bytes)});
    return loads;
  }
  // The filter tile: for each tap the tile's channels, rows in (tap, channel) order. With all of a group's
  // channels it is one load; with some, one per tap (its rows are not contiguous in W).
  const int64_t channels = rows.tile_size(rows_tile);
  const int64_t filters_begin = cols.tile_begin(cols_tile), filters = cols.tile_size(cols_tile);
  const int64_t group_rows = conv_group * d.taps() * shape_.k;
  if (rows.tile >= shape_.k)
    return {
        {arch::TensorRegion{frame.tensors[kW], group_rows, d.taps() * channels, filters_begin, filters}, 0}};
  std::vector<TileLoad> loads;
  for (int64_t tap = 0; tap < d.taps(); ++tap)
    loads.push_back(
        {arch::TensorRegion{frame.tensors[kW], group_rows + tap * shape_.k + rows.tile_begin(rows_tile),
                            channels, filters_begin, filters},
         static_cast<uint64_t>(tap * channels * frame.buffers->w_row_bytes)});
  return loads;
}

arch::Operation DirectConvStage::pe_operation(const TileFrame& frame, const TileIteration& iteration,
                                              const PeOperands& tile_operands, int64_t part) const {
  const DirectConv& d = conv_;
  const InputRows in = input_rows_of(frame.parts[0], iteration.m_tile);
  // Image `part` of the tile: its input rows and output pixels follow the earlier images'.
  PeOperands operands = tile_operands;
  operands.a_address += input_slab_offset(in, part, operands.a_pitch);
  operands.o_address +=
      static_cast<uint64_t>(part * frame.parts[0].tile_size(iteration.m_tile) * d.q * operands.o_pitch);
  arch::PeConv conv;
  conv.e = frame.parts[0].tile_size(iteration.m_tile);
  conv.q = d.q;
  conv.m = frame.parts[1].tile_size(iteration.n_tile);
  conv.c = frame.parts[2].tile_size(iteration.k_tile);
  conv.ih = in.end - in.first;
  conv.iw = d.w;
  conv.r = d.r, conv.s = d.s, conv.stride = d.stride, conv.dilation = d.dilation;
  conv.pad_top = in.pad_top;
  conv.pad_left = d.pad;
  place_operands(conv, operands, conv.c, conv.m);
  return conv;
}

arch::TensorRegion DirectConvStage::output_region(const TileFrame& frame, const TileIteration& iteration,
                                                  int64_t rows, int64_t cols) const {
  const DirectConv& d = conv_;
  return arch::TensorRegion{
      frame.tensors[kO],
      (image_of(iteration.group) * d.p + frame.parts[0].tile_begin(iteration.m_tile)) * d.q, rows,
      conv_group_of(iteration.group) * shape_.n + frame.parts[1].tile_begin(iteration.n_tile), cols};
}

}  // namespace tessera::mapper
