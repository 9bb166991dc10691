#include "cli/app.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "arch/isa/program_text.hpp"
#include "cli/inputs.hpp"
#include "cli/output_folder.hpp"
#include "cli/sweep_command.hpp"
#include "common/text.hpp"
#include "flow/map_workload.hpp"
#include "flow/run_workload.hpp"
#include "flow/simulate_program.hpp"
#include "traces/atomic_file.hpp"
#include "traces/map_report.hpp"
#include "traces/report.hpp"

namespace tessera::cli {

namespace {

enum ExitCode { kOk = 0, kNumericsMismatch = 1, kBadInput = 2, kInternalFault = 3 };

// The most --threads: far past any core count a run can use, and few enough worker processes that starting
// them cannot exhaust the system's process table.
constexpr int kMaxThreads = 1024;
// The most --simulate-top: each candidate is a whole simulation (a 4096^3 GEMM's takes a third of a second).
constexpr int kMaxSimulateTop = 64;
// The most --refine-rounds: each round simulates as many candidates of a row again as --simulate-top.
constexpr int kMaxRefineRounds = 8;

// Options several commands share.
struct Common {
  std::string arch_path = default_arch_path();
  std::string workload_path = default_workload_path();
  std::string dataflow = "all";
  std::string objective = "cycles";
  std::string out_dir;
  std::string format = "table";
  std::vector<std::string> overrides;
  int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
  bool quiet = false;
  std::string reference_root = default_reference_root();
};

void add_machine_options(CLI::App* command, Common& common) {
  command->add_option("--arch", common.arch_path, "machine YAML")->capture_default_str();
  command->add_option("--set", common.overrides,
                      "override a field, e.g. core.sram.kib=256 or ops.ffn1.m=1024 (repeatable)");
  command->add_option("--out", common.out_dir,
                      "write the report, trace, tile programs and resolved configs here");
  command->add_option("--format", common.format, "what to print")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  // At most kMaxThreads: each is a thread of the mapper, the CPU reference and a functional run's arithmetic,
  // and from 2 a worker process.
  command
      ->add_option("--threads", common.threads,
                   fmt::format("threads for the mapper, the CPU reference and a functional run's "
                               "arithmetic, 1 to {} (default: this machine's cores)",
                               kMaxThreads))
      ->check(CLI::Range(1, kMaxThreads))
      ->capture_default_str();
  command->add_flag("--quiet", common.quiet, "no progress lines on stderr");
}

// "ws,os" -> {ws, os}: the dataflows a --dataflow list names (a sweep's workers take one list).
std::vector<std::string> split_dataflows(const std::string& text) {
  std::vector<std::string> names;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    names.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

// --objective, checked by the option itself.
mapper::Objective objective_of(const Common& common) {
  mapper::Objective objective = mapper::Objective::cycles;
  const bool known = mapper::parse_objective(common.objective, objective);
  TESSERA_ASSERT(known, "--objective names an objective");
  return objective;
}

void add_workload_options(CLI::App* command, Common& common) {
  command->add_option("--workload", common.workload_path, "workload YAML")->capture_default_str();
  command->add_option("--dataflow", common.dataflow, "dataflows to explore: all, one, or a list (ws,os)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (value == "all") return "";
            const std::vector<std::string> listed = split_dataflows(value);
            for (size_t i = 0; i < listed.size(); ++i) {
              if (listed[i] != "ws" && listed[i] != "os" && listed[i] != "is" && listed[i] != "rs")
                return "'" + listed[i] + "' is not one of ws, os, is, rs or all";
              if (std::find(listed.begin(), listed.begin() + static_cast<long>(i), listed[i]) !=
                  listed.begin() + static_cast<long>(i))
                return "'" + listed[i] + "' is listed twice";
            }
            return "";
          },
          "{ws,os,is,rs,all}", "dataflow list"))
      ->capture_default_str();
  command
      ->add_option("--objective", common.objective,
                   "what candidates are ranked and winners picked by: the fewest cycles, the least energy, "
                   "the least energy x delay, or the fewest DRAM bytes")
      ->check(CLI::IsMember({"cycles", "energy", "edp", "dram"}))
      ->capture_default_str();
  command
      ->add_option("--reference", common.reference_root, "recorded GPU references (<dir>/<gpu>/<workload>/)")
      ->capture_default_str();
}

std::vector<arch::Dataflow> dataflows_for(const std::string& choice, const arch::ArchSpec& spec,
                                          const SourceLocation& arch_location) {
  if (choice == "all") return spec.core.pe_array.dataflows;
  std::vector<arch::Dataflow> chosen;
  for (const std::string& name : split_dataflows(choice)) {
    const arch::Dataflow dataflow = arch::parse_dataflow(name);
    if (!spec.core.pe_array.supports(dataflow)) {
      throw InputError(arch_location, "--dataflow",
                       fmt::format("machine '{}' does not support dataflow {}", spec.name, name),
                       "core.pe_array.dataflows lists what it supports; --dataflow all explores those");
    }
    chosen.push_back(dataflow);
  }
  return chosen;
}

std::function<void(const std::string&)> progress_printer(const Common& common) {
  if (common.quiet) return {};
  return [](const std::string& line) { std::fprintf(stderr, "tessera: %s\n", line.c_str()); };
}

std::function<void(const std::string&)> warning_printer() {
  return [](const std::string& line) { std::fprintf(stderr, "tessera: warning: %s\n", line.c_str()); };
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// The machine and the workload a command reads, with its --set overrides applied.
struct Inputs {
  MachineInput machine;
  WorkloadInput workload;
  // Where a machine field is written, for the mapper's "no legal mapping" errors.
  SourceLocation locate(const std::string& field) const { return locate_field(machine.document, field); }
};

Inputs load_inputs(const Common& common) {
  const Overrides overrides = route_overrides(common.overrides, true);
  MachineInput machine = load_machine(common.arch_path, overrides.arch);
  return Inputs{std::move(machine), load_workload(common.workload_path, overrides.workload)};
}

int run_command(const Common& common, bool timing_only, const flow::CandidateRules& candidates) {
  const auto started = std::chrono::steady_clock::now();
  const Inputs inputs = load_inputs(common);
  OutputFolder out(common.out_dir);
  out.check();
  const arch::ArchSpec& spec = inputs.machine.spec;

  flow::RunSettings settings;
  settings.dataflows = dataflows_for(common.dataflow, spec, SourceLocation{common.arch_path, 0, 0});
  settings.timing_only = timing_only;
  settings.trace = !common.out_dir.empty();
  settings.threads = common.threads;
  settings.candidates = candidates;
  settings.objective = objective_of(common);
  settings.workload_name = inputs.workload.workload.name;
  settings.reference_root = common.reference_root;
  settings.locate_machine_field = [&](const std::string& field) { return inputs.locate(field); };
  settings.progress = progress_printer(common);
  settings.warn = warning_printer();
  flow::WorkloadRun run = flow::run_workload(inputs.workload.workload, spec, settings);
  traces::Report& report = run.report;
  report.objective = mapper::name_of(settings.objective);
  report.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (out.enabled()) {
    for (auto& [file, text] : run.program_files) out.add(file, std::move(text));
    out.add("report.json", traces::to_json(report));
    out.add("report.csv", traces::to_csv(report));
    out.add("trace.json", std::move(run.chrome_trace));
    out.add("arch.resolved.yaml", config::to_yaml_text(arch::to_yaml(spec)));
    out.add("workload.resolved.yaml", config::to_yaml_text(ops::to_yaml(inputs.workload.workload)));
    out.commit();
  }
  print(common.format == "json" ? traces::to_json(report) : traces::to_table(report));
  return report.numerics_pass() ? kOk : kNumericsMismatch;
}

int map_command(const Common& common, int top) {
  const Inputs inputs = load_inputs(common);
  OutputFolder out(common.out_dir);
  out.check();
  const arch::ArchSpec& spec = inputs.machine.spec;

  flow::MapSettings settings;
  settings.dataflows = dataflows_for(common.dataflow, spec, SourceLocation{common.arch_path, 0, 0});
  settings.top = top;
  settings.objective = objective_of(common);
  settings.threads = common.threads;
  settings.write_programs = !common.out_dir.empty();
  settings.locate_machine_field = [&](const std::string& field) { return inputs.locate(field); };
  settings.progress = progress_printer(common);
  flow::WorkloadMap map = flow::map_workload(inputs.workload.workload, spec, settings);
  if (out.enabled()) {
    for (auto& [file, text] : map.program_files) out.add(file, std::move(text));
    out.add("map.json", traces::to_json(map.report));
    out.add("arch.resolved.yaml", config::to_yaml_text(arch::to_yaml(spec)));
    out.add("workload.resolved.yaml", config::to_yaml_text(ops::to_yaml(inputs.workload.workload)));
    out.commit();
  }
  print(common.format == "json" ? traces::to_json(map.report) : traces::to_table(map.report));
  return kOk;
}

int sim_command(const Common& common, const std::string& program_path, bool timing_only) {
  const auto started = std::chrono::steady_clock::now();
  const Overrides overrides = route_overrides(common.overrides, false);
  const MachineInput machine_input = load_machine(common.arch_path, overrides.arch);
  const arch::ArchSpec& spec = machine_input.spec;
  const arch::Program program = arch::read_program_file(program_path);
  OutputFolder out(common.out_dir);
  out.check();
  flow::ProgramRun run = flow::simulate_program(program, program_path, spec, timing_only,
                                                !common.out_dir.empty(), common.threads);
  traces::Report& report = run.report;
  report.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (out.enabled()) {
    out.add("report.json", traces::to_json(report));
    out.add("report.csv", traces::to_csv(report));
    out.add("trace.json", std::move(run.chrome_trace));
    out.add("arch.resolved.yaml", config::to_yaml_text(arch::to_yaml(spec)));
    out.commit();
  }
  print(common.format == "json" ? traces::to_json(report) : traces::to_table(report));
  return report.numerics_pass() ? kOk : kNumericsMismatch;
}

// Runs the GPU reference runner on this machine's GPU for every op of the workload and files the records
// where `tessera run` finds them.
int ref_command(const Common& common, const std::string& runner, const std::string& out_dir) {
  const Overrides overrides = route_overrides(common.overrides, true);
  const WorkloadInput workload_input = load_workload(common.workload_path, overrides.workload);
  const ops::Workload& workload = workload_input.workload;
  if (!std::filesystem::exists(runner)) {
    throw InputError(SourceLocation{runner, 0, 0}, "--runner", "the GPU reference runner is not built here",
                     "it is built when CMake finds a CUDA toolkit; on a GPU machine with only the toolkit, "
                     "scripts/gpu-reference.sh builds and runs it");
  }
  const std::string staging =
      (std::filesystem::temp_directory_path() / ("tessera-ref-" + std::to_string(::getpid()))).string();
  std::string command = "'" + runner + "' --out '" + staging + "'";
  for (const ops::Op& op : workload.ops) {
    // The op's workload entry as key=value pairs (the runner records "no GPU path" for kinds it lacks).
    command += fmt::format(" --op kind={},index={},seed={}", op.kind_name(), op.index, workload.seed);
    for (const auto& [key, value] : ops::entry_of(op))
      if (key != "kind") command += fmt::format(",{}={}", key, value);
  }
  if (!common.quiet) std::fprintf(stderr, "tessera: %s\n", command.c_str());
  const int status = std::system(command.c_str());
  if (status != 0) {
    std::filesystem::remove_all(staging);
    throw InputError(
        SourceLocation{runner, 0, 0}, "ref", "the GPU reference runner failed (see its message above)",
        "it needs an NVIDIA GPU; CI and machines without one use the records in traces/reference");
  }
  // File the records under <root>/<gpu>/<workload>/ (the GPU's name, lower case, blanks as dashes).
  std::ifstream run_file(staging + "/run.json");
  std::string gpu = nlohmann::json::parse(run_file).at("gpu").value("name", "gpu");
  std::transform(gpu.begin(), gpu.end(), gpu.begin(), [](char c) {
    return c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (const std::string problem = path_name_problem(gpu); !problem.empty()) {
    std::filesystem::remove_all(staging);
    throw InputError(SourceLocation{staging + "/run.json", 0, 0}, "gpu.name",
                     fmt::format("the GPU's name '{}' {}", gpu, problem),
                     "the records are filed under the GPU's name: the runner's run.json must name a GPU");
  }
  const std::string destination =
      out_dir.empty() ? common.reference_root + "/" + gpu + "/" + workload.name : out_dir;
  traces::ensure_directory(destination);
  for (const auto& entry : std::filesystem::directory_iterator(staging))
    std::filesystem::rename(entry.path(), std::filesystem::path(destination) / entry.path().filename());
  std::filesystem::remove_all(staging);
  print(fmt::format("GPU reference of {} written to {}\n", workload.name, destination));
  return kOk;
}

// A tile program checked as `tessera sim` reads it, without a machine: its text, and its op line against its
// tensors. The machine's checks (mesh, SRAM, units) are sim's, with --arch.
int validate_program(const std::string& path) {
  const arch::Program program = arch::read_program_file(path);
  if (program.op) {
    uint64_t seed = 0;
    const ops::Op op = flow::op_from_binding(*program.op, path, &seed, program.header_lines.op);
    flow::check_op_tensors(op, program, path);
  }
  print(fmt::format(
      "# {}: a valid tile program '{}' for a {}x{} mesh: {} instructions on {} cores{}; run it with "
      "tessera sim --arch MACHINE --program {}\n",
      path, program.name, program.mesh.rows, program.mesh.cols, program.instruction_count(),
      program.cores.size(), program.op ? ", its op line and tensors agree" : "", path));
  return kOk;
}

int validate_command(const std::string& path, const std::vector<std::string>& overrides) {
  // A tile program or a sweep file is checked as what it is, not as a machine missing its fields. Only a
  // regular file is peeked at: load_file refuses devices and FIFOs before reading them.
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error)) {
    std::ifstream file(path);
    std::string first(16, '\0');
    file.read(first.data(), static_cast<std::streamsize>(first.size()));
    const bool tprog = path.size() > 6 && path.substr(path.size() - 6) == ".tprog";
    if (first.rfind("tessera-program", 0) == 0 || tprog) {
      if (!overrides.empty())
        throw InputError(SourceLocation{"--set " + overrides.front(), 0, 0}, "--set",
                         "a tile program takes no --set",
                         "edit the program, or --set the machine of tessera sim");
      return validate_program(path);
    }
  }
  config::Document document = config::load_file(path);
  if (document.root.IsMap() && document.root["grid"]) {
    if (!overrides.empty())
      throw InputError(SourceLocation{"--set " + overrides.front(), 0, 0}, "--set",
                       "a sweep file takes no --set", "its grid sets the machine's and workloads' fields");
    SweepOptions options;
    options.file = path;
    options.check = true;
    return sweep_command(options);
  }
  const bool is_workload = document.root.IsMap() && document.root["ops"];
  for (const std::string& assignment : overrides) config::apply_override(document, assignment);
  const YAML::Node resolved = is_workload ? ops::to_yaml(ops::workload_from_yaml(document))
                                          : arch::to_yaml(arch::arch_from_yaml(document));
  print(fmt::format("# {}: valid {}; resolved form with every default filled in\n", path,
                    is_workload ? "workload" : "machine"));
  print(config::to_yaml_text(resolved));
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera: a cycle-approximate simulator of AI accelerators with an operator mapper"};
  app.require_subcommand(0, 1);
  Common common;
  bool timing_only = false;
  flow::CandidateRules candidates;
  int top = 10;
  std::string program_path;
  std::string config_path;

  CLI::App* run = app.add_subcommand("run", "map, simulate and check every op of a workload (the default)");
  add_machine_options(run, common);
  add_workload_options(run, common);
  run->add_flag("--timing-only", timing_only, "skip the arithmetic (and so the numerics check)");
  run->add_option("--simulate-top", candidates.simulate_top,
                  fmt::format("candidates simulated per dataflow, 1 to {}", kMaxSimulateTop))
      ->check(CLI::Range(1, kMaxSimulateTop))
      ->capture_default_str();
  run->add_option("--refine-rounds", candidates.refine_rounds,
                  fmt::format("where a row's simulation shows its estimates more than {:.0f}% optimistic, "
                              "simulate its next candidates, up to this many times (0 to {}; 0: never)",
                              100 * candidates.refine_margin, kMaxRefineRounds))
      ->check(CLI::Range(0, kMaxRefineRounds))
      ->capture_default_str();

  CLI::App* map =
      app.add_subcommand("map", "mapper only: ranked candidates, and why each dataflow wins or loses");
  add_machine_options(map, common);
  add_workload_options(map, common);
  map->add_option("--top", top, "how many ranked candidates to show")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  CLI::App* sim = app.add_subcommand("sim", "run a tile program (possibly hand-written) on a machine");
  add_machine_options(sim, common);
  sim->add_option("--program", program_path, "tile program (*.tprog)")->required();
  sim->add_flag("--timing-only", timing_only, "skip the arithmetic");

  std::string runner_path = default_runner_path();
  std::string ref_out;
  CLI::App* ref =
      app.add_subcommand("ref", "run the workload on this machine's NVIDIA GPU and record the reference");
  ref->add_option("--workload", common.workload_path, "workload YAML")->capture_default_str();
  ref->add_option("--out", ref_out, "where to write the records (default: --reference/<gpu>/<workload>)");
  ref->add_option("--reference", common.reference_root, "recorded GPU references")->capture_default_str();
  ref->add_option("--runner", runner_path, "the tessera_gpu_ref binary")->capture_default_str();
  ref->add_option("--set", common.overrides, "override a workload field (repeatable)");
  ref->add_flag("--quiet", common.quiet, "do not echo the runner's command");

  CLI::App* validate =
      app.add_subcommand("validate",
                         "check a machine, workload or sweep file or a tile program; print the "
                         "resolved form of a machine or workload");
  validate->add_option("config", config_path, "machine, workload or sweep YAML, or a tile program")
      ->required();
  validate->add_option("--set", common.overrides, "override a field (repeatable)");

  SweepOptions sweep_options;
  sweep_options.jobs = common.threads;
  CLI::App* sweep = app.add_subcommand(
      "sweep", "run every design point of a sweep file (configs/sweeps), one tessera run process each");
  sweep->add_option("sweep", sweep_options.file, "sweep YAML")->required();
  CLI::Option* sweep_out = sweep->add_option(
      "--out", sweep_options.out_dir, "the sweep's folder: results.csv, points/; resumed if it exists");
  sweep
      ->add_flag("--check", sweep_options.check,
                 "validate every point's machine and workloads, print the points and jobs, run nothing")
      ->excludes(sweep_out);
  sweep
      ->add_option("--jobs", sweep_options.jobs,
                   fmt::format("processes at a time, 1 to {} (default: this machine's cores)", kMaxThreads))
      ->check(CLI::Range(1, kMaxThreads))
      ->capture_default_str();
  sweep
      ->add_option("--point-timeout", sweep_options.point_timeout_s,
                   "seconds a job may run before it is stopped and recorded as failed (0: no limit)")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  sweep->add_option("--shard", sweep_options.shard, "run shard i of N: the points whose index % N == i")
      ->capture_default_str();
  sweep->add_flag("--quiet", sweep_options.quiet, "no progress on stderr");
  sweep->callback([&] {
    if (!sweep_options.check && sweep_options.out_dir.empty())
      throw CLI::RequiredError("--out (or --check, to validate the sweep without running it)");
  });

  std::vector<std::string> shard_dirs;
  std::string merge_out;
  CLI::App* sweep_merge =
      app.add_subcommand("sweep-merge", "merge the folders of a sweep's shards into one results.csv");
  sweep_merge->add_option("shards", shard_dirs, "the shards' --out folders")->required();
  sweep_merge->add_option("--out", merge_out, "where to write results.csv")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return kBadInput;
  }
  try {
    int code = kOk;
    if (*map)
      code = map_command(common, top);
    else if (*sim)
      code = sim_command(common, program_path, timing_only);
    else if (*validate)
      code = validate_command(config_path, common.overrides);
    else if (*ref)
      code = ref_command(common, runner_path, ref_out);
    else if (*sweep)
      code = sweep_command(sweep_options);
    else if (*sweep_merge)
      code = sweep_merge_command(shard_dirs, merge_out);
    else
      code = run_command(common, timing_only, candidates);  // `tessera` alone runs the defaults
    // What was printed must have reached standard output (a full disk, a closed pipe): else the command
    // failed, whatever it computed.
    std::cout.flush();
    if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
      std::fprintf(stderr,
                   "error: cannot write to standard output: %s\n  hint: check where it goes (a full "
                   "disk, a closed pipe)\n",
                   std::strerror(errno));
      return kBadInput;
    }
    return code;
  } catch (const InputError& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return kBadInput;
  } catch (const InternalError& error) {
    std::fprintf(stderr, "tessera: %s\n  this is a bug in tessera; please report it with the command line\n",
                 error.what());
    return kInternalFault;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tessera: internal fault: %s\n", error.what());
    return kInternalFault;
  }
}

}  // namespace tessera::cli
