// --out is committed as a whole (cli/output_folder.hpp, issue "Hardening"): a second run replaces the first
// run's folder rather than mixing files into it, a folder of someone else's files is refused and left as it
// was, a stage folder left by a killed command is cleared, and a command killed at any moment leaves the
// old folder or the new one, complete.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

const char* kWorkload =
    "name: small\nseed: 3\nops:\n  - {name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16}\n";

std::set<std::string> files_in(const std::string& folder) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.insert(entry.path().filename().string());
  return names;
}

CommandResult run_into(const ScratchDir& scratch, const std::string& out) {
  return run_tessera({"run", "--workload", scratch.file("w.yaml"), "--timing-only", "--quiet", "--out", out});
}

TEST(OutputFolder, ASecondRunReplacesTheFirstRunsFolderWhole) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  const std::string out = scratch.file("out");
  ASSERT_EQ(run_into(scratch, out).exit_code, 0);
  const std::set<std::string> first = files_in(out);
  EXPECT_TRUE(first.count("report.json") && first.count(".tessera-out")) << first.size();
  // A file of the earlier run that the next one does not write (before: it stayed, mixed in).
  write_text(out + "/g.os.tprog.old", "stale");
  ASSERT_EQ(run_into(scratch, out).exit_code, 0);
  EXPECT_EQ(files_in(out), first);
  // Nothing left beside it.
  EXPECT_EQ(files_in(scratch.path()), (std::set<std::string>{"out", "w.yaml"}));
}

TEST(OutputFolder, AFolderOfOtherFilesIsRefusedAndLeftAsItWas) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  fs::create_directory(scratch.file("mine"));
  write_text(scratch.file("mine/notes.txt"), "keep me");
  const CommandResult result = run_into(scratch, scratch.file("mine"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("mine: --out: holds files tessera did not write"), std::string::npos)
      << result.output;
  EXPECT_EQ(files_in(scratch.file("mine")), (std::set<std::string>{"notes.txt"}));
  EXPECT_EQ(read_text(scratch.file("mine/notes.txt")), "keep me");
}

TEST(OutputFolder, AStageFolderLeftByAKilledCommandIsCleared) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  // pid 2^22 + 1 is above Linux's largest pid: no live process owns it.
  const std::string stale = scratch.file(".out.tessera-stage.4194305");
  fs::create_directory(stale);
  write_text(stale + "/report.json", "{");
  ASSERT_EQ(run_into(scratch, scratch.file("out")).exit_code, 0);
  EXPECT_FALSE(fs::exists(stale));
}

TEST(OutputFolder, ACommandKilledAtAnyMomentLeavesTheOldFolderOrTheNewOne) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  const std::string out = scratch.file("out");
  ASSERT_EQ(run_into(scratch, out).exit_code, 0);
  const std::set<std::string> complete = files_in(out);
  // SIGKILL after 0, 20, 40, ... ms: before, during or after the commit.
  for (int delay_ms = 0; delay_ms <= 400; delay_ms += 20) {
    const std::string command = std::string("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 timeout -s KILL ") +
                                std::to_string(delay_ms / 1000.0 + 0.001) + " " + TESSERA_BINARY +
                                " run --workload " + scratch.file("w.yaml") +
                                " --timing-only --quiet --out " + out + " > /dev/null";
    run_command(command);
    EXPECT_EQ(files_in(out), complete) << "killed after " << delay_ms << " ms";
  }
}

}  // namespace
}  // namespace tessera
