#include "arch/isa/pe_conv.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"
#include "arch/timing/rs_timing.hpp"
#include "common/text.hpp"

namespace tessera::arch {

namespace {
constexpr const char* kConvSyntax =
    "a conv is written: conv ws|os|is|rs a=ADDR w=ADDR o=ADDR e=E q=Q m=M c=C ih=IH iw=IW r=R s=S "
    "[stride=1] [dilation=1] [pad_top=0] [pad_left=0] dtype=DT acc=0|1 [a_pitch=B] [w_pitch=B] [o_pitch=B] "
    "[psum=bf16|fp16]";
}  // namespace

ConvTileShape tile_shape_of(const PeConv& conv) {
  return ConvTileShape{conv.e, conv.q, conv.m, conv.c, conv.r, conv.s, conv.ih, conv.iw};
}

const std::vector<std::string>& PeConv::mnemonics() {
  static const std::vector<std::string> names = {"conv"};
  return names;
}

PeConv PeConv::read(LineReader& in, std::string_view, int operation_column) {
  PeConv conv;
  const int dataflow_column = in.column();
  const std::string_view dataflow = in.scan_word();
  const std::vector<std::string>& dataflows = dataflow_names();
  if (std::find(dataflows.begin(), dataflows.end(), dataflow) == dataflows.end()) {
    if (dataflow.empty())
      in.fail_expected(dataflow_column, "the conv's dataflow (ws, os, is or rs)", kConvSyntax);
    in.fail(dataflow_column,
            fmt::format("unknown dataflow '{}'{}", dataflow, did_you_mean(std::string(dataflow), dataflows)),
            kConvSyntax);
  }
  conv.dataflow = parse_dataflow(std::string(dataflow));
  static const std::vector<std::string> options = {
      "a",        "w",       "o",        "e",       "q",       "m",       "c",
      "ih",       "iw",      "r",        "s",       "dtype",   "acc",     "stride",
      "dilation", "pad_top", "pad_left", "a_pitch", "w_pitch", "o_pitch", "psum"};
  constexpr uint32_t kRequired = 0x1fff;  // a through acc
  int64_t* sizes[] = {&conv.e, &conv.q, &conv.m, &conv.c, &conv.ih, &conv.iw, &conv.r, &conv.s};
  uint64_t* addresses[] = {&conv.a_address, &conv.w_address, &conv.o_address};
  int64_t* pitches[] = {&conv.a_pitch_bytes, &conv.w_pitch_bytes, &conv.o_pitch_bytes};
  uint32_t given = 0;
  while (!in.at_operation_end()) {
    const size_t option = in.read_option(options, 0, given, "conv", kConvSyntax);
    if (option < 3) {
      *addresses[option] = in.read_unsigned("an SRAM address");
    } else if (option < 11) {
      *sizes[option - 3] = in.read_positive(options[option]);
    } else if (option == 11) {
      conv.dtype = in.read_dtype("dtype", all_dtype_names());
    } else if (option == 12) {
      conv.accumulate = in.read_acc();
    } else if (option == 13) {
      conv.stride = in.read_positive("stride");
    } else if (option == 14) {
      conv.dilation = in.read_positive("dilation");
    } else if (option == 15) {
      conv.pad_top = in.read_size("pad_top");
    } else if (option == 16) {
      conv.pad_left = in.read_size("pad_left");
    } else if (option < 20) {
      *pitches[option - 17] = in.read_size("a row pitch in bytes");
    } else {
      conv.psum = in.read_dtype("partial-sum type", partial_sum_dtype_names());
    }
  }
  in.require_options(options, given, kRequired, operation_column, "conv", kConvSyntax);
  return conv;
}

void PeConv::write(LineWriter& out) const {
  out.put(
      "conv {} a=0x{:x} w=0x{:x} o=0x{:x} e={} q={} m={} c={} ih={} iw={} r={} s={} stride={} dilation={} "
      "pad_top={} pad_left={} dtype={} acc={}",
      name_of(dataflow), a_address, w_address, o_address, e, q, m, c, ih, iw, r, s, stride, dilation, pad_top,
      pad_left, name_of(dtype), accumulate ? 1 : 0);
  out.write_pitch("a_pitch", a_pitch_bytes);
  out.write_pitch("w_pitch", w_pitch_bytes);
  out.write_pitch("o_pitch", o_pitch_bytes);
  if (psum) out.put(" psum={}", name_of(*psum));
}

void PeConv::check(const InstructionChecks& checks) const {
  checks.pe_support(dataflow, dtype);
  if (dataflow == Dataflow::rs) {
    const std::string why = rs_infeasibility(checks.spec(), dtype, s);
    if (!why.empty()) checks.fail(why, "give the PEs larger scratchpads (core.pe_spad_bytes)");
  }
  checks.partial_sums(dtype, psum);
  const int64_t element = size_bytes(dtype);
  checks.sram_range("input tile a", a_address, ih * iw, c * element, a_pitch_bytes);
  checks.sram_range("filter tile w", w_address, r * s * c, m * element, w_pitch_bytes);
  checks.sram_range("output tile o", o_address, e * q, m * size_bytes(o_dtype()), o_pitch_bytes);
}

}  // namespace tessera::arch
