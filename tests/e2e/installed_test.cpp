// An installed tessera (`cmake --install build --prefix P`) finds its shipped configs and GPU records under
// P/share/tessera, not in the checkout it was built from; TESSERA_DATA names another such folder (issue
// "Hardening": an installed binary lost its defaults, which were absolute paths of the build tree).
#include <gtest/gtest.h>

#include <filesystem>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

TEST(Installed, TheBinaryFindsTheConfigsInstalledBesideItAndTesseraDataOverridesThem) {
  ScratchDir scratch;
  const std::string prefix = scratch.file("prefix");
  const std::string build_dir = fs::path(TESSERA_BINARY).parent_path().string();
  const CommandResult install = run_command("cmake --install '" + build_dir + "' --prefix '" + prefix + "'");
  ASSERT_EQ(install.exit_code, 0) << install.output;
  const std::string binary = prefix + "/bin/tessera";
  const std::string share = prefix + "/share/tessera";
  ASSERT_TRUE(exists(share + "/configs/arch/default.yaml"));
  ASSERT_TRUE(exists(share + "/traces/reference"));

  // Its defaults, shown by --help, are the installed files.
  const CommandResult help = run_command("'" + binary + "' run --help");
  EXPECT_NE(help.output.find("--arch TEXT=" + share + "/configs/arch/default.yaml"), std::string::npos)
      << help.output;
  EXPECT_NE(help.output.find("--reference TEXT=" + share + "/traces/reference"), std::string::npos)
      << help.output;
  EXPECT_EQ(help.output.find(TESSERA_SOURCE_DIR), std::string::npos) << help.output;

  // It runs on them from another folder, the relative paths of a shipped sweep read from there too.
  const CommandResult run =
      run_command("cd '" + scratch.path() + "' && SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 '" + binary +
                  "' run --timing-only --quiet --format json");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("\"workload\""), std::string::npos);
  const CommandResult sweep = run_command("cd '" + scratch.path() + "' && '" + binary + "' sweep '" + share +
                                          "/configs/sweeps/tiny-gemm.yaml' --check");
  EXPECT_EQ(sweep.exit_code, 0) << sweep.output;

  // TESSERA_DATA names another folder holding configs/.
  fs::create_directories(scratch.file("data/configs/arch"));
  fs::create_directories(scratch.file("data/configs/workloads"));
  fs::copy_file(share + "/configs/arch/default.yaml", scratch.file("data/configs/arch/default.yaml"));
  const CommandResult other =
      run_command("TESSERA_DATA='" + scratch.file("data") + "' '" + binary + "' run --help");
  EXPECT_NE(other.output.find("--arch TEXT=" + scratch.file("data") + "/configs/arch/default.yaml"),
            std::string::npos)
      << other.output;
  // Its workload default then names a file that folder lacks: a located error, exit 2.
  const CommandResult missing = run_command("cd '" + scratch.path() + "' && TESSERA_DATA='" +
                                            scratch.file("data") + "' '" + binary + "' run --timing-only");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find(scratch.file("data") + "/configs/workloads/default.yaml"), std::string::npos)
      << missing.output;
}

}  // namespace
}  // namespace tessera
