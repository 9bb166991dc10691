#include "ops/density.hpp"

#include <fmt/format.h>

namespace tessera::ops {

std::string ActivationDensity::text() const {
  return dense() ? std::string() : fmt::format(" density={:g}/{:g}", input, output);
}

void visit_density(FieldVisitor& visitor, ActivationDensity& density) {
  visitor.group("density", [&](FieldVisitor& fields) {
    fields.real("input", density.input, RealRule::positive, 1.0);
    fields.real("output", density.output, RealRule::positive, 1.0);
  });
}

void check_density(const ActivationDensity& density, const FieldChecks& checks) {
  for (const auto& [field, value] :
       {std::pair{"density.input", density.input}, {"density.output", density.output}})
    if (value > 1.0)
      checks.fail(field,
                  fmt::format("a density is the fraction of non-zero values, at most 1, not {:g}", value),
                  "0.4 means 40% of the values are non-zero; leave it out for dense data");
}

}  // namespace tessera::ops
