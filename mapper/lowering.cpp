#include "mapper/lowering.hpp"

#include "common/error.hpp"

namespace tessera::mapper {

arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec,
                    const std::string& program_name) {
  TESSERA_ASSERT(mapping.form != nullptr, "a mapping lowered has a form");
  return mapping.form->lower(op, seed, mapping, spec, program_name);
}

void prepare_lowering(const ops::Op& op, uint64_t seed, const Mapping& mapping) {
  if (mapping.form) mapping.form->prepare_lowering(op, seed);
}

}  // namespace tessera::mapper
