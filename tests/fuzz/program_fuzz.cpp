// libFuzzer target: the tile-program reader, the checker, the op line's checks and a bounded timing run on
// the default machine (built only with -DTESSERA_FUZZ=ON; scripts/fuzz.sh). Every input must end in a result
// or an InputError: anything else (another exception, a crash, a sanitizer report, a hang) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "arch/spec.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "flow/simulate_program.hpp"
#include "sim/machine.hpp"

namespace {

// The timing run is bounded: programs of few instructions and small tensors, and a cycle bound (a run past it
// stops). SystemC elaborates one model per process, and a run that deadlocks leaves it unable to run again:
// from then on inputs are read and checked only.
constexpr int64_t kMaxTimedInstructions = 256;
constexpr int64_t kMaxTimedTensorBytes = int64_t{16} << 20;
constexpr int64_t kCycleBound = 10'000'000;

const tessera::arch::ArchSpec& machine_spec() {
  static const tessera::arch::ArchSpec spec = tessera::arch::arch_from_yaml(
      tessera::config::load_file(std::string(TESSERA_SOURCE_DIR) + "/configs/arch/default.yaml"));
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static std::optional<sim::Machine> machine;
  static bool can_run = true;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const arch::Program program = arch::read_program(text, "fuzz.tprog");
    arch::check_program(program, machine_spec());
    if (program.op) {
      uint64_t seed = 0;
      flow::check_op_tensors(flow::op_from_binding(*program.op, "fuzz.tprog", &seed, program.header_lines.op),
                             program, "fuzz.tprog");
    }
    int64_t tensor_bytes = 0;
    for (const arch::TensorDecl& tensor : program.tensors) tensor_bytes += tensor.size_in_bytes();
    if (!can_run || program.instruction_count() > kMaxTimedInstructions ||
        tensor_bytes > kMaxTimedTensorBytes)
      return 0;
    if (!machine) machine.emplace(machine_spec());
    try {
      (void)machine->run(program, sim::RunOptions{false, false, kCycleBound});
    } catch (const InputError&) {
      can_run = false;  // a run-time error (a deadlock) may leave the model unable to run again
    }
  } catch (const InputError&) {
  }
  return 0;
}

extern "C" int sc_main(int, char**) {
  return 0;
}
