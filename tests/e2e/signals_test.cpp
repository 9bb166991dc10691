// A `tessera run` killed by a signal sent to it alone (issue "Hardening": SIGTERM or SIGINT to the parent
// left its forked simulation workers running, 3 GB each on gemm-8192) leaves no process behind and `--out` as
// it was or complete. The workers die with their parent through PR_SET_PDEATHSIG (sim/worker_pool.cpp), set
// in the worker before it does anything and checked against a parent that died before it took effect.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/cli_helpers.hpp"
#include "e2e/process_table.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The processes of process group `group` that are not yet zombies, and the CPU time (clock ticks) of the
// busiest child of `parent`.
struct Processes {
  std::vector<pid_t> in_group;
  long busiest_child_ticks = -1;  // -1: no child
};

Processes processes_of(pid_t group, pid_t parent) {
  Processes found;
  for (const ProcessEntry& process : process_table()) {
    if (process.state == 'Z') continue;
    if (process.group == group) found.in_group.push_back(process.pid);
    if (process.parent == parent)
      found.busiest_child_ticks = std::max(found.busiest_child_ticks, process.cpu_ticks);
  }
  return found;
}

// Starts tessera in its own process group (so that everything it starts can be found by the group).
pid_t start(const std::vector<std::string>& arguments) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    // As a terminal's foreground job has it (a non-interactive shell's background job inherits it ignored).
    ::signal(SIGINT, SIG_DFL);
    std::vector<char*> argv;
    std::string binary = TESSERA_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copies = arguments;
    for (std::string& argument : copies) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const int quiet = ::open("/dev/null", O_WRONLY);
    ::dup2(quiet, 1);
    ::dup2(quiet, 2);
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // either side may win the race; both set the same group
  return pid;
}

std::string report_of(const std::string& out) {
  return fs::exists(out + "/report.json") ? read_text(out + "/report.json") : std::string();
}

// A GEMM 8192^3 on a 4x4 mesh, timing only, with one worker beside the parent: seconds a candidate.
std::vector<std::string> gemm_8192_run(const std::string& out) {
  return {"run",
          "--arch",
          std::string(TESSERA_SOURCE_DIR) + "/configs/arch/mesh4x4.yaml",
          "--workload",
          std::string(TESSERA_SOURCE_DIR) + "/configs/workloads/gemm-8192.yaml",
          "--timing-only",
          "--quiet",
          "--threads",
          "2",
          "--out",
          out};
}

TEST(Signals, AKilledRunLeavesNoProcessBehindAndItsOutputFolderOldOrComplete) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  // The folder of an earlier, small run: a killed run must leave it as it was, or replace it whole.
  write_text(scratch.file("small.yaml"),
             "name: small\nseed: 3\nops:\n  - {name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16}\n");
  ASSERT_EQ(
      run_tessera({"run", "--workload", scratch.file("small.yaml"), "--timing-only", "--quiet", "--out", out})
          .exit_code,
      0);
  const std::string old_report = report_of(out);
  ASSERT_FALSE(old_report.empty());

  const std::vector<std::string> run = gemm_8192_run(out);
  int killed_with_workers = 0;
  for (const int signal : {SIGTERM, SIGINT, SIGKILL}) {
    // Killed once a worker has simulated for 0.1 s, and for 1 s: in the middle of a candidate's program,
    // which (seconds long) it would finish before noticing that its parent is gone.
    for (const long worker_ticks : {sysconf(_SC_CLK_TCK) / 10, sysconf(_SC_CLK_TCK)}) {
      SCOPED_TRACE(std::string(strsignal(signal)) + " once a worker ran " + std::to_string(worker_ticks) +
                   " ticks");
      const pid_t parent = start(run);
      ASSERT_GT(parent, 0);
      const auto give_up = Clock::now() + std::chrono::seconds(120);
      bool had_workers = false;
      int status = 0;
      while (!had_workers && Clock::now() < give_up && ::waitpid(parent, &status, WNOHANG) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        had_workers = processes_of(parent, parent).busiest_child_ticks >= worker_ticks;
      }
      ASSERT_TRUE(had_workers) << "no worker ran for that long";
      ASSERT_EQ(::kill(parent, signal), 0);  // the parent alone, not its group
      ASSERT_EQ(::waitpid(parent, &status, 0), parent);
      if (!WIFEXITED(status)) ++killed_with_workers;
      // Its workers go at once (SIGKILL from the kernel), not when their program ends (seconds here): give
      // them a moment to be reaped by init.
      const auto deadline = Clock::now() + std::chrono::milliseconds(500);
      std::vector<pid_t> left = processes_of(parent, parent).in_group;
      while (!left.empty() && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        left = processes_of(parent, parent).in_group;
      }
      EXPECT_TRUE(left.empty()) << left.size() << " processes of the killed run remain, e.g. "
                                << left.front();
      for (pid_t pid : left) ::kill(pid, SIGKILL);
      // The old folder, or the new one whole.
      const std::string report = report_of(out);
      ASSERT_FALSE(report.empty()) << "--out has no report.json";
      if (report != old_report) {
        EXPECT_NE(report.find("\"gemm-8192\""), std::string::npos);
        EXPECT_EQ(report.substr(report.find_last_not_of(" \n")), "}");
        EXPECT_TRUE(fs::exists(out + "/.tessera-out"));
      }
    }
  }
  // The test covers what the issue reported: a parent killed while its workers ran.
  EXPECT_EQ(killed_with_workers, 6);
}

// Ctrl-C at a terminal sends SIGINT to the whole foreground process group: the parent and its simulation
// workers. The run stops within a second, terminated by SIGINT (the shell's exit 130), and leaves no live
// process (issue "hardening 2").
TEST(Signals, CtrlCToTheProcessGroupStopsARunWithinASecondAsSigint) {
  ScratchDir scratch;
  const std::vector<std::string> run = gemm_8192_run(scratch.file("out"));
  // While the mapper searches (0.2 s in) and while a worker simulates a candidate.
  for (const bool with_workers : {false, true}) {
    SCOPED_TRACE(with_workers ? "while a worker simulates" : "while the mapper searches");
    const pid_t parent = start(run);
    ASSERT_GT(parent, 0);
    int status = 0;
    if (with_workers) {
      const auto give_up = Clock::now() + std::chrono::seconds(120);
      while (Clock::now() < give_up && ::waitpid(parent, &status, WNOHANG) == 0 &&
             processes_of(parent, parent).busiest_child_ticks < sysconf(_SC_CLK_TCK) / 10)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ASSERT_GE(processes_of(parent, parent).busiest_child_ticks, sysconf(_SC_CLK_TCK) / 10);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const auto sent = Clock::now();
    ASSERT_EQ(::kill(-parent, SIGINT), 0);  // the group, as the terminal does
    ASSERT_EQ(::waitpid(parent, &status, 0), parent);
    const double seconds = std::chrono::duration<double>(Clock::now() - sent).count();
    EXPECT_LT(seconds, 1.0);
    EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) ||
                (WIFEXITED(status) && WEXITSTATUS(status) == 130))
        << status;
    const auto deadline = Clock::now() + std::chrono::milliseconds(500);
    std::vector<pid_t> left = processes_of(parent, parent).in_group;
    while (!left.empty() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      left = processes_of(parent, parent).in_group;
    }
    EXPECT_TRUE(left.empty()) << left.size() << " processes of the interrupted run remain";
    for (pid_t pid : left) ::kill(pid, SIGKILL);
    EXPECT_FALSE(fs::exists(scratch.file("out"))) << "an interrupted run wrote --out";
  }
}

}  // namespace
}  // namespace tessera
