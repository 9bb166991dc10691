#include "arch/isa/dma_load.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"

namespace tessera::arch {

namespace {
constexpr const char* kLoadSyntax =
    "a load is written: load T[r0:r1, c0:c1] -> ADDR [pitch=BYTES] [to R,C R,C ...]";
}  // namespace

const std::vector<std::string>& DmaLoad::mnemonics() {
  static const std::vector<std::string> names = {"load"};
  return names;
}

DmaLoad DmaLoad::read(LineReader& in, std::string_view, int) {
  DmaLoad load;
  load.source = in.read_region();
  in.expect_arrow("'->' and the SRAM address after the region", kLoadSyntax);
  load.sram_address = in.read_unsigned("an SRAM address");
  static const std::vector<std::string> options = {"pitch", "to"};
  constexpr uint32_t kTo = 0b10;  // a list of cores, not key=value
  uint32_t given = 0;
  while (!in.at_operation_end()) {
    if (in.read_option(options, kTo, given, "load", kLoadSyntax) == 0) {
      load.sram_pitch_bytes = in.read_size("the SRAM row pitch in bytes");
    } else {
      do {
        const int core_column = in.column();
        const int core = in.read_core_index();
        if (std::find(load.destinations.begin(), load.destinations.end(), core) != load.destinations.end()) {
          const Coord coord = core_coord(core, in.program().mesh);
          in.fail(core_column, fmt::format("core {},{} is listed twice", coord.row, coord.col),
                  "a multicast reaches each listed core once");
        }
        load.destinations.push_back(core);
      } while (in.next_is_digit());
    }
  }
  return load;
}

void DmaLoad::write(LineWriter& out) const {
  out.put("load ");
  out.write_region(source);
  out.put(" -> 0x{:x}", sram_address);
  out.write_pitch("pitch", sram_pitch_bytes);
  if (!destinations.empty()) {
    out.put(" to");
    for (int core : destinations) {
      out.put(" ");
      out.write_core(core);
    }
  }
}

void DmaLoad::check(const InstructionChecks& checks) const {
  const Program& program = checks.program();
  const ArchSpec& spec = checks.spec();
  checks.region(source);
  const int64_t row_bytes = source.cols * size_bytes(program.tensors[source.tensor].dtype);
  checks.sram_range("destination", sram_address, source.rows, row_bytes, sram_pitch_bytes);
  for (size_t i = 0; i < destinations.size(); ++i) {
    checks.core_index(destinations[i], "the multicast");
    for (size_t j = 0; j < i; ++j)
      if (destinations[j] == destinations[i]) checks.fail("a core is listed twice in the multicast");
  }
  if (destinations.size() > 1 && !spec.noc.multicast) {
    checks.fail(fmt::format("multicast to {} cores, but machine '{}' has noc.multicast: false",
                            destinations.size(), spec.name),
                "load each core's copy separately, or enable multicast");
  }
}

}  // namespace tessera::arch
