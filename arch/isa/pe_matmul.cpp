#include "arch/isa/pe_matmul.hpp"

#include <fmt/format.h>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"

namespace tessera::arch {

namespace {
constexpr const char* kMatmulSyntax =
    "a matmul is written: ws|os|is a=ADDR w=ADDR o=ADDR m=M n=N k=K dtype=DT acc=0|1 [a_pitch=B] "
    "[w_pitch=B] [o_pitch=B] [wt=1] [psum=bf16|fp16] (wt=1: W stored transposed, n rows of k; psum: O's "
    "16-bit "
    "partial sums)";
}  // namespace

// Every dataflow, rs included: `pe rs ...` reads as a matmul, and the checker says where RS runs.
const std::vector<std::string>& PeMatmul::mnemonics() {
  return dataflow_names();
}

PeMatmul PeMatmul::read(LineReader& in, std::string_view mnemonic, int operation_column) {
  PeMatmul matmul;
  matmul.dataflow = parse_dataflow(std::string(mnemonic));
  enum MatmulOption : size_t {
    key_a,
    key_w,
    key_o,
    key_m,
    key_n,
    key_k,
    key_dtype,
    key_acc,
    key_a_pitch,
    key_w_pitch,
    key_o_pitch,
    key_wt,
    key_psum
  };
  static const std::vector<std::string> options = {
      "a", "w", "o", "m", "n", "k", "dtype", "acc", "a_pitch", "w_pitch", "o_pitch", "wt", "psum"};
  constexpr uint32_t kRequired = 0xff;  // a through acc
  const std::string operation = name_of(matmul.dataflow);
  uint32_t given = 0;
  while (!in.at_operation_end()) {
    switch (in.read_option(options, 0, given, operation, kMatmulSyntax)) {
      case key_a:
        matmul.a_address = in.read_unsigned("the SRAM address of A");
        break;
      case key_w:
        matmul.w_address = in.read_unsigned("the SRAM address of W");
        break;
      case key_o:
        matmul.o_address = in.read_unsigned("the SRAM address of O");
        break;
      case key_m:
        matmul.m = in.read_positive("m");
        break;
      case key_n:
        matmul.n = in.read_positive("n");
        break;
      case key_k:
        matmul.k = in.read_positive("k");
        break;
      case key_dtype:
        matmul.dtype = in.read_dtype("dtype", all_dtype_names());
        break;
      case key_acc:
        matmul.accumulate = in.read_acc();
        break;
      case key_a_pitch:
        matmul.a_pitch_bytes = in.read_size("the row pitch of A in bytes");
        break;
      case key_w_pitch:
        matmul.w_pitch_bytes = in.read_size("the row pitch of W in bytes");
        break;
      case key_o_pitch:
        matmul.o_pitch_bytes = in.read_size("the row pitch of O in bytes");
        break;
      case key_wt:
        matmul.w_transposed = in.read_zero_or_one("wt", "wt=1: W is stored transposed, n rows of k");
        break;
      case key_psum:
        matmul.psum = in.read_dtype("partial-sum type", partial_sum_dtype_names());
        break;
    }
  }
  in.require_options(options, given, kRequired, operation_column, operation, kMatmulSyntax);
  return matmul;
}

void PeMatmul::write(LineWriter& out) const {
  out.put("{} a=0x{:x} w=0x{:x} o=0x{:x} m={} n={} k={} dtype={} acc={}", name_of(dataflow), a_address,
          w_address, o_address, m, n, k, name_of(dtype), accumulate ? 1 : 0);
  out.write_pitch("a_pitch", a_pitch_bytes);
  out.write_pitch("w_pitch", w_pitch_bytes);
  out.write_pitch("o_pitch", o_pitch_bytes);
  if (w_transposed) out.put(" wt=1");
  if (psum) out.put(" psum={}", name_of(*psum));
}

void PeMatmul::check(const InstructionChecks& checks) const {
  checks.pe_support(dataflow, dtype);
  if (dataflow == Dataflow::rs) {
    checks.fail("row stationary runs convolutions: a matmul takes ws, os or is",
                "write the convolution as 'conv rs ...', or pick another dataflow for the matmul");
  }
  if (m <= 0 || n <= 0 || k <= 0) checks.fail("m, n and k must be positive");
  checks.partial_sums(dtype, psum);
  const int64_t element = size_bytes(dtype);
  checks.sram_range("operand a", a_address, m, k * element, a_pitch_bytes);
  checks.sram_range("operand w", w_address, w_rows(), w_cols() * element, w_pitch_bytes);
  checks.sram_range("result o", o_address, m, n * size_bytes(o_dtype()), o_pitch_bytes);
}

}  // namespace tessera::arch
