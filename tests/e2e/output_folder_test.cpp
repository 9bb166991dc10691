// --out is committed as a whole (cli/output_folder.hpp, issue "Hardening"): a second run replaces the first
// run's folder rather than mixing files into it, a folder of someone else's files is refused and left as it
// was, a stage folder left by a killed command is cleared, and a command killed at any moment leaves the
// old folder or the new one, complete.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
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

CommandResult run_into(const ScratchDir& scratch, const std::string& out, const std::string& dataflow) {
  return run_tessera({"run", "--workload", scratch.file("w.yaml"), "--timing-only", "--quiet", "--dataflow",
                      dataflow, "--out", out});
}

TEST(OutputFolder, ASecondRunReplacesTheFirstRunsFolderWhole) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  const std::string out = scratch.file("out");
  ASSERT_EQ(run_into(scratch, out, "ws,os").exit_code, 0);
  const std::set<std::string> first = files_in(out);
  EXPECT_TRUE(first.count("report.json") && first.count(".tessera-out") && first.count("g.os.tprog"))
      << first.size();
  // The second run writes no g.os.tprog: the first run's (listed in its marker) must not stay, mixed in.
  ASSERT_EQ(run_into(scratch, out, "ws").exit_code, 0);
  std::set<std::string> second = first;
  second.erase("g.os.tprog");
  EXPECT_EQ(files_in(out), second);
  // Nothing left beside it.
  EXPECT_EQ(files_in(scratch.path()), (std::set<std::string>{"out", "w.yaml"}));
}

// A folder holding `files` (name -> contents) given to --out: refused before the run, naming `in_the_way`,
// and left as it was.
void expect_refused_and_kept(const std::map<std::string, std::string>& files, const std::string& in_the_way) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  const std::string folder = scratch.file("mine");
  fs::create_directory(folder);
  std::set<std::string> names;
  for (const auto& [name, contents] : files) write_text(folder + "/" + name, contents), names.insert(name);
  const CommandResult result = run_into(scratch, folder);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(
      result.output.find("mine: --out: holds files tessera did not write (" + in_the_way + " is in the way)"),
      std::string::npos)
      << result.output;
  EXPECT_EQ(files_in(folder), names);
  for (const auto& [name, contents] : files) EXPECT_EQ(read_text(folder + "/" + name), contents) << name;
}

TEST(OutputFolder, AFolderOfOtherFilesIsRefusedAndLeftAsItWas) {
  expect_refused_and_kept({{"notes.txt", "keep me"}}, "notes.txt");
}

// Issue "hardening 2", defect 2: a report.json is no proof that a folder is tessera's (before: the folder,
// notes.txt and all, was replaced with exit 0); nor is a marker file of another form (an older tessera's, or
// someone's).
TEST(OutputFolder, AForeignFileBesideAForeignReportIsRefusedAndKept) {
  expect_refused_and_kept({{"report.json", "{}"}, {"notes.txt", "keep"}}, "notes.txt");
  expect_refused_and_kept({{"report.json", "{}"}}, "report.json");
  expect_refused_and_kept(
      {{".tessera-out", "written by tessera; --out may replace it\n"}, {"report.json", "{}"}},
      ".tessera-out");
}

// A file the user puts into tessera's own folder is theirs: the next run refuses the folder rather than
// delete it.
TEST(OutputFolder, AFileAddedToTesserasFolderIsRefusedAndKept) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  const std::string out = scratch.file("out");
  ASSERT_EQ(run_into(scratch, out).exit_code, 0);
  write_text(out + "/analysis.md", "mine");
  const CommandResult result = run_into(scratch, out);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("holds files tessera did not write (analysis.md is in the way)"),
            std::string::npos)
      << result.output;
  EXPECT_EQ(read_text(out + "/analysis.md"), "mine");
}

// An --out that cannot be written is refused before the run, not after it (issue "hardening 2").
TEST(OutputFolder, AnUnwritableFolderIsRefusedBeforeTheRun) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  const CommandResult result = run_into(scratch, "/proc/tessera-out/x");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(
      result.output.find("/proc/tessera-out/x: --out: cannot be written: creating a folder in /proc fails"),
      std::string::npos)
      << result.output;
  // Refused before the op ran: no progress line and no table.
  EXPECT_EQ(result.output.find("cycles"), std::string::npos) << result.output;
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
