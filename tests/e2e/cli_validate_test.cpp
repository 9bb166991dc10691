#include <gtest/gtest.h>

#include "e2e/run_tessera.hpp"

namespace tessera {

TEST(CliValidate, PrintsTheResolvedMachineWithDefaultsFilled) {
  const auto result =
      run_tessera({"validate", std::string(TESSERA_SOURCE_DIR) + "/configs/arch/mesh4x4.yaml"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("interleave_bytes: 256"), std::string::npos) << result.output;
}

}  // namespace tessera
