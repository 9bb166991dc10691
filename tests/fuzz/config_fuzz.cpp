// libFuzzer target: the machine and workload YAML readers with --set overrides (built only with
// -DTESSERA_FUZZ=ON; scripts/fuzz.sh). The input is a YAML text, optionally followed by a line "#--set" and
// one override per line. Every input must end in a value or an InputError: anything else (another exception,
// a crash, a sanitizer report, a hang) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "arch/spec.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "ops/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t marker = input.find("\n#--set\n");
  const std::string text = input.substr(0, marker);
  std::string overrides = marker == std::string::npos ? std::string() : input.substr(marker + 8);
  for (const bool machine : {true, false}) {
    try {
      config::Document document = config::load_text(text, "fuzz.yaml");
      for (size_t start = 0; start < overrides.size();) {
        const size_t end = std::min(overrides.find('\n', start), overrides.size());
        if (end > start) config::apply_override(document, overrides.substr(start, end - start));
        start = end + 1;
      }
      if (machine)
        (void)arch::arch_from_yaml(document);
      else
        (void)ops::workload_from_yaml(document);
    } catch (const InputError&) {
    }
  }
  return 0;
}

// libsystemc (linked through the libraries) wants an sc_main; libFuzzer brings main().
extern "C" int sc_main(int, char**) {
  return 0;
}
