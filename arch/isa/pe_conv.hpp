// pe conv: a direct convolution tile on the PE array.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
#include "arch/isa/fields.hpp"
#include "arch/isa/queue.hpp"
#include "arch/spec.hpp"
#include "arch/timing/conv_timing.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

class LineReader;
class LineWriter;
class InstructionChecks;

// A direct convolution tile on the PE array (docs/tile-program.md, "conv"): the input tile holds `ih` rows of
// `iw` pixels of `c` channels (one pixel per SRAM row), the filter tile r*s*c rows of `m` filters in (filter
// row, filter column, channel) order, the output tile e*q pixels of `m` partial sums of o_dtype():
//   O[y][x][f] (+)= sum over fr, fs, ch of I[y*stride + fr*dilation - pad_top][x*stride + fs*dilation -
//   pad_left][ch] * W[(fr*s + fs)*c + ch][f],
// where I is zero outside the tile's rows and columns (the padding, which occupies no SRAM). WS, OS and IS
// run it as r*s matrix products on shifted windows of the input tile (the array's operand address generator
// walks them); RS runs it as Eyeriss does (docs/pe-array-timing.md, "RS").
struct PeConv {
  Dataflow dataflow = Dataflow::rs;
  DType dtype = DType::bf16;
  uint64_t a_address = 0, w_address = 0, o_address = 0;
  int64_t a_pitch_bytes = 0, w_pitch_bytes = 0, o_pitch_bytes = 0;  // 0 = packed rows
  int64_t e = 0, q = 0;                                             // output rows and columns
  int64_t m = 0, c = 0;                                             // filters, channels
  int64_t ih = 0, iw = 0;                                           // input tile rows and columns in SRAM
  int64_t r = 1, s = 1, stride = 1, dilation = 1, pad_top = 0, pad_left = 0;
  bool accumulate = false;
  std::optional<DType> psum;  // as PeMatmul::psum
  DType o_dtype() const { return partial_sum_of(dtype, psum); }

  int64_t macs() const { return e * q * m * c * r * s; }
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("dataflow", &PeConv::dataflow), visit("dtype", &PeConv::dtype);
    visit("a_address", &PeConv::a_address), visit("w_address", &PeConv::w_address);
    visit("o_address", &PeConv::o_address), visit("a_pitch_bytes", &PeConv::a_pitch_bytes);
    visit("w_pitch_bytes", &PeConv::w_pitch_bytes), visit("o_pitch_bytes", &PeConv::o_pitch_bytes);
    visit("e", &PeConv::e), visit("q", &PeConv::q), visit("m", &PeConv::m), visit("c", &PeConv::c);
    visit("ih", &PeConv::ih), visit("iw", &PeConv::iw), visit("r", &PeConv::r), visit("s", &PeConv::s);
    visit("stride", &PeConv::stride), visit("dilation", &PeConv::dilation),
        visit("pad_top", &PeConv::pad_top);
    visit("pad_left", &PeConv::pad_left), visit("accumulate", &PeConv::accumulate);
    visit("psum", &PeConv::psum);
  }
  bool operator==(const PeConv& other) const { return equal_fields(*this, other); }

  static constexpr QueueKind kQueue = QueueKind::pe;
  // What a unit waiting on this instruction's signal is charged.
  static constexpr Cause kWaitersCause = Cause::sync;
  static const std::vector<std::string>& mnemonics();  // the operation words it is written with
  static PeConv read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

// The shape of the instruction that its timing depends on (arch/timing).
ConvTileShape tile_shape_of(const PeConv& conv);

}  // namespace tessera::arch
