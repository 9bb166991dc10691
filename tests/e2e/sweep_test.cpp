// tessera sweep and sweep-merge (issue 16) as a user runs them: a grid with a zipped axis expands to the
// points it should, a bad path, value or zip is a located error before anything runs, the CSV holds the rows
// `tessera run` gives for each point, a sweep killed midway (a job's process SIGKILLed, then the sweep
// SIGINTed) and run again writes the same bytes as an uninterrupted one, two shards merged equal one run,
// and a job that runs past --point-timeout or whose point is invalid is recorded as such.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "e2e/cli_helpers.hpp"
#include "e2e/process_table.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// A two-core machine of 8x8 PE arrays: gemm-256 on it takes ~0.2 s (timing only).
const char* kMachine =
    "name: tiny\nclock_ghz: 1.0\nmesh: {rows: 1, cols: 2}\n"
    "noc: {link_bytes_per_cycle: 64, router_latency_cycles: 2, multicast: true}\n"
    "dram: {bandwidth_gbps: 256, channels: 2, latency_cycles: 100}\n"
    "core:\n  pe_array: {rows: 8, cols: 8, dataflows: [ws, os, is, rs], overlap_folds: full}\n"
    "  pe_register_bytes: 64\n  sram: {kib: 128, banks: 4, bank_width_bytes: 64}\n"
    "  dma: {engines: 2, bytes_per_cycle: 64, setup_cycles: 16}\n"
    "energy_pj: {mac: 0.5, sram_byte: 1.0, dram_byte: 20.0, noc_byte_hop: 0.3}\n";

// A sweep of the tiny machine on gemm-256 (path relative to the checkout) with `grid` (indented lines).
std::string write_sweep(const ScratchDir& scratch, const std::string& grid, const std::string& extra = "") {
  write_text(scratch.file("tiny.yaml"), kMachine);
  write_text(scratch.file("s.yaml"), "name: small\narch: " + scratch.file("tiny.yaml") +
                                         "\nworkloads: [configs/workloads/gemm-256.yaml]\n" + extra +
                                         "grid:\n" + grid);
  return scratch.file("s.yaml");
}

const char* kGrid =
    "  core.pe_array.rows: [8, 16]\n"
    "  core.pe_array.cols: {zip: core.pe_array.rows}\n"
    "  dram.bandwidth_gbps: [128, 256, 512]\n";

std::vector<std::vector<std::string>> csv_of(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(read_text(path));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream splitter(line);
    for (std::string field; std::getline(splitter, field, ',');) fields.push_back(field);
    rows.push_back(fields);
  }
  return rows;
}

TEST(Sweep, AGridWithAZippedAxisExpandsToTheProductOfItsOwnAxes) {
  ScratchDir scratch;
  const std::string sweep = write_sweep(scratch, kGrid, "dataflows: [ws, os]\n");
  const CommandResult result = run_tessera({"sweep", sweep, "--out", scratch.file("out"), "--jobs", "2"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = csv_of(scratch.file("out/results.csv"));
  ASSERT_EQ(rows.size(), 1u + 6 * 2) << result.output;  // header, then an op row and a total row per point
  EXPECT_EQ(rows[0][2] + " " + rows[0][3] + " " + rows[0][4],
            "core.pe_array.rows core.pe_array.cols dram.bandwidth_gbps");
  // Rows before columns (the first axis outermost); cols moves with rows.
  const std::vector<std::string> expected = {"8 8 128",   "8 8 256",   "8 8 512",
                                             "16 16 128", "16 16 256", "16 16 512"};
  for (size_t point = 0; point < 6; ++point) {
    for (size_t r = 1 + 2 * point; r < 3 + 2 * point; ++r) {
      EXPECT_EQ(rows[r][0], std::to_string(point));
      EXPECT_EQ(rows[r][2] + " " + rows[r][3] + " " + rows[r][4], expected[point]);
      EXPECT_EQ(rows[r][8], "ok");
    }
    EXPECT_EQ(rows[1 + 2 * point][6], "gemm256");
    EXPECT_TRUE(rows[1 + 2 * point][7] == "ws" || rows[1 + 2 * point][7] == "os") << rows[1 + 2 * point][7];
    EXPECT_EQ(rows[2 + 2 * point][6], "(total)");
  }
}

TEST(Sweep, ItsRowsAreWhatTesseraRunReportsForThePoint) {
  ScratchDir scratch;
  const std::string sweep = write_sweep(scratch, kGrid);
  ASSERT_EQ(run_tessera({"sweep", sweep, "--out", scratch.file("out"), "--jobs", "2", "--quiet"}).exit_code,
            0);
  const auto rows = csv_of(scratch.file("out/results.csv"));
  ASSERT_EQ(rows.size(), 13u);
  // Point 4: rows=cols=16, 256 GB/s, run by hand.
  const CommandResult run = run_tessera({"run", "--arch", scratch.file("tiny.yaml"), "--workload",
                                         shipped("workloads/gemm-256.yaml"), "--set", "core.pe_array.rows=16",
                                         "--set", "core.pe_array.cols=16", "--set", "dram.bandwidth_gbps=256",
                                         "--timing-only", "--format", "json", "--quiet", "--threads", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json report = nlohmann::json::parse(run.output);
  const std::vector<std::string>& op = rows[9];
  const std::vector<std::string>& total = rows[10];
  ASSERT_EQ(op[0], "4");
  EXPECT_EQ(op[7], report["ops"][0]["winner"].get<std::string>());
  EXPECT_EQ(op[10], std::to_string(report["totals"]["cycles"].get<int64_t>()));
  EXPECT_EQ(total[10], std::to_string(report["totals"]["cycles"].get<int64_t>()));
  EXPECT_EQ(total[13], std::to_string(report["totals"]["dram_bytes"].get<int64_t>()));
  EXPECT_EQ(total.back(), "skipped");  // timing only: no numerics
  // The point's report is filed under its id.
  EXPECT_TRUE(exists(scratch.file("out/points/" + op[1] + "/gemm-256/report.json")));
}

struct BadSweep {
  std::string grid;
  std::string extra;
  std::string message;  // after "<sweep file>:"
};

TEST(Sweep, EveryShippedSweepIsValidAndCheckRunsNothing) {
  // --check builds every point's machine and workloads as a run would, and writes nothing.
  const std::map<std::string, std::string> jobs = {
      {"noc-link-width", "10 points x 1 workloads = 10 jobs"},
      {"pe-sram-dram-small", "18 points x 2 workloads = 36 jobs"},
      {"pe-vs-sram", "36 points x 2 workloads = 72 jobs"},
      {"sram-banks", "6 points x 1 workloads = 6 jobs"},
      {"tiny-gemm", "8 points x 1 workloads = 8 jobs"},
      {"vector-lanes", "24 points x 2 workloads = 48 jobs"}};
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(shipped("sweeps")))
    files.insert(entry.path().stem().string());
  std::set<std::string> listed;
  for (const auto& [name, count] : jobs) listed.insert(name);
  EXPECT_EQ(files, listed) << "a shipped sweep without its expected job count here";
  for (const std::string& name : files) {
    const CommandResult result = run_tessera({"sweep", shipped("sweeps/" + name + ".yaml"), "--check"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(result.output, "sweep " + name + ": valid, " + jobs.at(name) + "\n");
  }
  const CommandResult neither = run_tessera({"sweep", shipped("sweeps/tiny-gemm.yaml")});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.output.find("--out (or --check, to validate the sweep without running it) is required"),
            std::string::npos)
      << neither.output;
}

TEST(Sweep, ABadPathValueOrZipIsALocatedErrorBeforeAnythingRuns) {
  const std::vector<BadSweep> cases = {
      {"  core.sram.kibs: [64]\n", "",
       "5:19: grid.core.sram.kibs: unknown key; did you mean 'kib'?\n"
       "  hint: the README lists every field of this file\n"},
      {"  cor.sram.kib: [64]\n", "",
       "5:17: grid.cor.sram.kib: no machine or workload field starts with 'cor'; did you mean 'core'?\n"
       "  hint: machine fields: name, clock_ghz, mesh, noc, dram, core or energy_pj; workload fields: name, "
       "seed or ops\n"},
      {"  core.pe_array.rows: [8, 16]\n  core.sram.kib: [64, -5]\n", "",
       "6:23: grid.core.sram.kib[1]: core.sram.kib: expected a positive integer, got -5 (point 1: "
       "core.pe_array.rows=8, core.sram.kib=-5)\n"
       "  hint: this field counts or sizes something: at least 1\n"},
      {"  core.pe_array.rows: [8, 16]\n  core.pe_array.cols: {zip: core.pe_array.row}\n", "",
       "6:29: grid.core.pe_array.cols.zip: 'core.pe_array.row' is not an axis of the grid\n"
       "  hint: zip names another key of 'grid'; did you mean 'core.pe_array.rows'?\n"},
      {"  core.pe_array.rows: [8, 16]\n  core.pe_array.cols: {zip: core.pe_array.rows, values: [8]}\n", "",
       "6:58: grid.core.pe_array.cols.values: 1 values, but 'core.pe_array.rows' has 2\n"
       "  hint: a zipped axis has one value per value of the axis it follows\n"},
      {"  core.pe_array.rows: {zip: core.pe_array.cols}\n  core.pe_array.cols: {zip: core.pe_array.rows}\n",
       "",
       "5:29: grid.core.pe_array.rows.zip: the zips go round in a circle\n"
       "  hint: one axis of a zipped group lists its values; the others zip to it\n"},
      {"  ops.ffn1.m: [64]\n", "",
       "5:15: grid.ops.ffn1.m: 'ffn1' selects no element of the list ops (1 elements)\n"
       "  hint: index from 0, or name an element by its 'name'\n"},
      {"  core.sram.kib: [64]\n", "dataflows: [ws, sw]\n",
       "4:17: dataflows[1]: 'sw' is not one of ws, os, is or rs; did you mean 'ws'?\n"
       "  hint: names are case-sensitive; pick one of those listed\n"},
      {"  core.pe_array.dataflows: [[ws, os, rs], [ws, os]]\n", "dataflows: [ws, rs]\n",
       "4:12: dataflows: machine 'tiny' does not support dataflow rs (point 1)\n"
       "  hint: core.pe_array.dataflows lists what it supports; leave 'dataflows' out for all\n"},
      {"  name: [a]\n", "",
       "5:9: grid.name: 'name' is a field of both the machine and the workload\n"
       "  hint: write arch.name or workload.name\n"},
      {"  core.sram.kib: [64]\n", "parameter: core.sram.banks\n",
       "4:12: parameter: the one-parameter sweep format is gone\n"
       "  hint: write 'workloads: [FILE]' and 'grid: {PATH: [VALUES]}' (README, \"Sweeps\")\n"},
  };
  for (const BadSweep& bad : cases) {
    ScratchDir scratch;
    const std::string sweep = write_sweep(scratch, bad.grid, bad.extra);
    const CommandResult result = run_tessera({"sweep", sweep, "--out", scratch.file("out")});
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_EQ(result.output, "error: " + sweep + ":" + bad.message) << bad.grid;
    EXPECT_FALSE(exists(scratch.file("out")));
  }
}

// Starts the command with its output thrown away; returns its pid.
pid_t spawn_tessera(const std::vector<std::string>& arguments) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<std::string> all = {TESSERA_BINARY};
    all.insert(all.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& argument : all) argv.push_back(argument.data());
    argv.push_back(nullptr);
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// A child process of `parent`, or 0 if it has none now.
pid_t child_of(pid_t parent) {
  const std::vector<pid_t> children = children_of(parent);
  return children.empty() ? 0 : children.front();
}

TEST(Sweep, KilledMidwayAndRunAgainItWritesTheSameCsvAsAnUninterruptedRun) {
  ScratchDir scratch;
  // ops.gemm256.m=512: ~0.3 s a job, long enough to be caught running.
  const std::string sweep = write_sweep(scratch, std::string(kGrid) + "  ops.gemm256.m: [512]\n");
  ASSERT_EQ(run_tessera({"sweep", sweep, "--out", scratch.file("whole"), "--jobs", "2", "--quiet"}).exit_code,
            0);

  const std::vector<std::string> command = {"sweep", sweep, "--out", scratch.file("cut"), "--jobs", "2"};
  const pid_t sweep_pid = spawn_tessera(command);
  pid_t job = 0;
  for (int tries = 0; tries < 2000 && job == 0; ++tries) {
    job = child_of(sweep_pid);
    if (job == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_NE(job, 0) << "the sweep started no job";
  ::kill(job, SIGKILL);  // a job dies: recorded as killed, the sweep goes on
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(sweep_pid, SIGINT);  // the sweep is stopped midway
  int status = 0;
  ::waitpid(sweep_pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_NE(read_text(scratch.file("cut/results.csv")), read_text(scratch.file("whole/results.csv")));

  const CommandResult again = run_tessera(command);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("finished earlier"), std::string::npos) << again.output;
  EXPECT_EQ(read_text(scratch.file("cut/results.csv")), read_text(scratch.file("whole/results.csv")));
  // A third run finds everything done and runs nothing.
  const CommandResult done = run_tessera(command);
  EXPECT_NE(done.output.find("6 jobs in shard 0/1 (6 finished earlier)"), std::string::npos) << done.output;
  EXPECT_EQ(read_text(scratch.file("cut/results.csv")), read_text(scratch.file("whole/results.csv")));
}

TEST(Sweep, TwoShardsMergedAreTheSameCsvAsOneRun) {
  ScratchDir scratch;
  const std::string sweep = write_sweep(scratch, kGrid);
  ASSERT_EQ(run_tessera({"sweep", sweep, "--out", scratch.file("whole"), "--jobs", "2", "--quiet"}).exit_code,
            0);
  for (const char* shard : {"0/2", "1/2"}) {
    const std::string dir = scratch.file(std::string("shard") + shard[0]);
    const CommandResult result = run_tessera({"sweep", sweep, "--out", dir, "--shard", shard, "--quiet"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(csv_of(dir + "/results.csv").size(), 1u + 3 * 2) << shard;
  }
  const CommandResult missing =
      run_tessera({"sweep-merge", scratch.file("shard0"), "--out", scratch.file("merged")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.output, "error: " + scratch.file("shard0") +
                                ": sweep-merge: 3 of 6 points are in no shard (points 1, 3, 5)\n"
                                "  hint: name every shard folder of the sweep\n");
  const CommandResult merged = run_tessera(
      {"sweep-merge", scratch.file("shard0"), scratch.file("shard1"), "--out", scratch.file("merged")});
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_EQ(read_text(scratch.file("merged/results.csv")), read_text(scratch.file("whole/results.csv")));

  // A shard's results.csv with a row that is no point of the sweep (issue "hardening 2": garbage or an empty
  // row was an internal fault; point 999 of an 8-point sweep was kept): a located error, nothing merged.
  const std::string csv = read_text(scratch.file("shard1/results.csv"));
  for (const auto& [row, said] : std::vector<std::pair<std::string, std::string>>{
           {"999,x\n", "the row does not start with a point of this 6-point sweep ('999')"},
           {"\n", "the row does not start with a point of this 6-point sweep ('')"},
           {"18446744073709551616,x\n", "('18446744073709551616')"},
           {"garbage\n", "('garbage')"}}) {
    write_text(scratch.file("shard1/results.csv"), csv + row);
    const CommandResult doctored = run_tessera(
        {"sweep-merge", scratch.file("shard0"), scratch.file("shard1"), "--out", scratch.file("merged2")});
    EXPECT_EQ(doctored.exit_code, 2) << doctored.output;
    EXPECT_NE(doctored.output.find(scratch.file("shard1/results.csv") + ":8:1: sweep-merge: "),
              std::string::npos)
        << doctored.output;
    EXPECT_NE(doctored.output.find(said), std::string::npos) << doctored.output;
    EXPECT_FALSE(exists(scratch.file("merged2")));
  }
}

TEST(Sweep, AJobPastThePointTimeoutOrOnAnInvalidPointIsRecordedAndTheSweepGoesOn) {
  ScratchDir scratch;
  // Point 0: 1 KiB in one 1 KiB-wide bank holds no tile (invalid); point 1: 1 KiB in four banks fits the
  // smallest tiles and runs ~4 s here (m=2048; at 1024 it took ~2 s, at the timeout's edge); point 2 runs in
  // ~0.2 s.
  const std::string sweep =
      write_sweep(scratch,
                  "  core.sram.kib: [1, 1, 128]\n"
                  "  core.sram.banks: {zip: core.sram.kib, values: [1, 4, 4]}\n"
                  "  core.sram.bank_width_bytes: {zip: core.sram.kib, values: [1024, 64, 64]}\n"
                  "  ops.gemm256.m: {zip: core.sram.kib, values: [256, 2048, 256]}\n");
  const CommandResult result =
      run_tessera({"sweep", sweep, "--out", scratch.file("out"), "--jobs", "2", "--point-timeout", "2"});
  EXPECT_EQ(result.exit_code, 1) << result.output;
  const auto rows = csv_of(scratch.file("out/results.csv"));
  ASSERT_EQ(rows.size(), 1u + 1 + 1 + 2) << result.output;
  EXPECT_EQ(rows[1][9], "invalid");
  EXPECT_NE(read_text(scratch.file("out/results.csv")).find("no legal mapping for gemm256"),
            std::string::npos);
  EXPECT_EQ(rows[2][9], "timeout");
  EXPECT_EQ(rows[2][10], "ran past --point-timeout 2 s and was stopped");
  EXPECT_EQ(rows[3][9], "ok");
  EXPECT_EQ(rows[4][9], "ok");
}

TEST(Sweep, AFolderOfAnotherSweepIsRefusedNotMixedIn) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  ASSERT_EQ(run_tessera({"sweep", write_sweep(scratch, "  core.sram.kib: [128]\n"), "--out", out, "--quiet"})
                .exit_code,
            0);
  const std::string before = read_text(out + "/results.csv");
  const CommandResult other =
      run_tessera({"sweep", write_sweep(scratch, "  core.sram.kib: [256]\n"), "--out", out, "--quiet"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_EQ(other.output, "error: " + out +
                              ": --out: holds another sweep ('small', or this one before its files changed)\n"
                              "  hint: give --out a new folder, or remove this one to start again\n");
  EXPECT_EQ(read_text(out + "/results.csv"), before);
}

TEST(Sweep, RunTakesTheSweepsDataflowsAsAList) {
  ScratchDir scratch;
  write_text(scratch.file("tiny.yaml"), kMachine);
  const std::vector<std::string> run = {"run",
                                        "--arch",
                                        scratch.file("tiny.yaml"),
                                        "--workload",
                                        shipped("workloads/gemm-256.yaml"),
                                        "--timing-only",
                                        "--format",
                                        "json",
                                        "--quiet",
                                        "--threads",
                                        "1",
                                        "--dataflow"};
  std::vector<std::string> listed = run;
  listed.push_back("is,os");
  const CommandResult result = run_tessera(listed);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::set<std::string> explored;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  for (const auto& row : report["ops"][0]["runs"]) explored.insert(row["dataflow"].get<std::string>());
  EXPECT_EQ(explored, (std::set<std::string>{"is", "os"}));
  std::vector<std::string> twice = run;
  twice.push_back("ws,ws");
  const CommandResult repeated = run_tessera(twice);
  EXPECT_EQ(repeated.exit_code, 2);
  EXPECT_NE(repeated.output.find("--dataflow: 'ws' is listed twice"), std::string::npos) << repeated.output;
}

}  // namespace
}  // namespace tessera
