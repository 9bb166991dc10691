#include "cli/sweep_command.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <set>

#include <csignal>
#include <cstdio>

#include "cli/inputs.hpp"
#include "sweep/runner.hpp"

namespace tessera::cli {

namespace {

volatile std::sig_atomic_t g_stop = 0;

void request_stop(int) {
  g_stop = 1;
}

// SIGINT and SIGTERM stop the sweep between polls (its jobs are killed, their partial output dropped) for as
// long as an object lives.
class StopOnSignal {
 public:
  StopOnSignal() {
    g_stop = 0;
    struct sigaction action = {};
    action.sa_handler = request_stop;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopOnSignal() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
};

sweep::Shard parse_shard(const std::string& text) {
  const SourceLocation where{"--shard " + text, 0, 0};
  const size_t slash = text.find('/');
  auto digits = [](const std::string& part) {
    return !part.empty() && part.size() <= 6 && part.find_first_not_of("0123456789") == std::string::npos;
  };
  if (slash == std::string::npos || !digits(text.substr(0, slash)) || !digits(text.substr(slash + 1)))
    throw InputError(where, "--shard", "expected i/N", "--shard 0/4 runs the first of 4 shards");
  sweep::Shard shard{std::stoi(text.substr(0, slash)), std::stoi(text.substr(slash + 1))};
  if (shard.count < 1 || shard.index >= shard.count)
    throw InputError(where, "--shard", fmt::format("shard {} of {} does not exist", shard.index, shard.count),
                     "shards are numbered 0 to N-1");
  return shard;
}

std::string clock_text(double seconds);

// Says how far the check of a large sweep is, at most once a second once it has taken two.
class CheckProgress {
 public:
  CheckProgress(size_t points, bool quiet) : points_(points), quiet_(quiet) {}
  void at(size_t point) {
    if (quiet_ || point % 256 != 0) return;
    const double elapsed = seconds_since(start_);
    if (elapsed < 2 || seconds_since(last_) < 1) return;
    last_ = std::chrono::steady_clock::now();
    const double eta = elapsed / static_cast<double>(point) * static_cast<double>(points_ - point);
    std::fprintf(stderr, "tessera: sweep: checked %zu of %zu points (ETA %s)\n", point, points_,
                 clock_text(eta).c_str());
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point then) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - then).count();
  }
  size_t points_;
  bool quiet_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};

// Builds every point's machine and workloads as `tessera run --set` does, before anything runs; returns the
// workloads' names. Each file is read once; a workload whose overrides an earlier point had is built once.
std::vector<std::string> validate(const sweep::SweepSpec& spec, const std::vector<sweep::Point>& points,
                                  bool quiet) {
  std::vector<std::string> names(spec.workloads.size());
  const config::Document arch_file = config::load_file(spec.arch_path());
  std::vector<config::Document> workload_files;
  for (size_t w = 0; w < spec.workloads.size(); ++w)
    workload_files.push_back(config::load_file(spec.workload_path(w)));
  std::set<std::vector<std::string>> workloads_built;
  CheckProgress progress(points.size(), quiet);
  for (const sweep::Point& point : points) {
    progress.at(point.index);
    // Errors name the --set argument they come from; locate_in_sweep moves them to the sweep file.
    auto located = [&](auto build) {
      try {
        return build();
      } catch (const InputError& error) {
        throw sweep::locate_in_sweep(spec, point, error);
      }
    };
    // What is built from a copy of a file read before is built again from the file on an error, which then
    // has its line and column.
    auto from_copy = [&](auto build, auto build_from_file) {
      return located([&] {
        try {
          return build();
        } catch (const InputError&) {
          return build_from_file();
        }
      });
    };
    const Overrides routed = located([&] { return route_overrides(sweep::assignments(spec, point), true); });
    const MachineInput machine = from_copy([&] { return machine_from(arch_file, routed.arch); },
                                           [&] { return load_machine(spec.arch_path(), routed.arch); });
    for (const std::string& dataflow : spec.dataflows)
      if (!machine.spec.core.pe_array.supports(arch::parse_dataflow(dataflow)))
        throw InputError(spec.dataflows_location, "dataflows",
                         fmt::format("machine '{}' does not support dataflow {} (point {})",
                                     machine.spec.name, dataflow, point.index),
                         "core.pe_array.dataflows lists what it supports; leave 'dataflows' out for all");
    if (!workloads_built.insert(routed.workload).second) continue;
    for (size_t w = 0; w < spec.workloads.size(); ++w) {
      const WorkloadInput workload =
          from_copy([&] { return workload_from(workload_files[w], routed.workload); },
                    [&] { return load_workload(spec.workload_path(w), routed.workload); });
      if (point.index == 0) names[w] = workload.workload.name;
    }
  }
  return names;
}

std::string clock_text(double seconds) {
  const long total = static_cast<long>(seconds + 0.5);
  return total >= 3600 ? fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60)
                       : fmt::format("{}:{:02}", total / 60, total % 60);
}

std::function<void(const sweep::Progress&)> progress_printer(bool quiet) {
  if (quiet) return {};
  if (::isatty(STDERR_FILENO)) {
    return [](const sweep::Progress& progress) {
      const size_t finished = progress.skipped + progress.done;
      const int width = 30;
      const int filled = progress.jobs ? static_cast<int>(width * finished / progress.jobs) : width;
      std::fprintf(stderr, "\rtessera: sweep [%s%s] %zu/%zu jobs, %zu failed, %s elapsed, ETA %s\033[K",
                   std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(width - filled), '-').c_str(), finished, progress.jobs,
                   progress.failed, clock_text(progress.elapsed_s).c_str(),
                   progress.eta_s < 0 ? "?" : clock_text(progress.eta_s).c_str());
      if (finished == progress.jobs) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  }
  return [](const sweep::Progress& progress) {
    if (!progress.point) {
      std::fprintf(stderr, "tessera: sweep: %zu jobs, %zu finished earlier\n", progress.jobs,
                   progress.skipped);
      return;
    }
    std::fprintf(stderr, "tessera: sweep %zu/%zu: point %s %s: %s, %s (ETA %s)\n",
                 progress.skipped + progress.done, progress.jobs, progress.point->id.c_str(),
                 progress.workload.c_str(), progress.status.c_str(), progress.summary.c_str(),
                 clock_text(progress.eta_s).c_str());
  };
}

}  // namespace

int sweep_command(const SweepOptions& options) {
  // CLI::Range lets nan through (every comparison with it is false): it would mean no limit, silently.
  if (!std::isfinite(options.point_timeout_s))
    throw InputError(SourceLocation{"--point-timeout nan", 0, 0}, "--point-timeout",
                     "expected a number of seconds, 0 to 1e7 (0: no limit), not nan",
                     "give the seconds a job may run, or 0 for no limit");
  const sweep::Shard shard = parse_shard(options.shard);
  const sweep::SweepSpec spec = sweep::sweep_from_yaml(config::load_file(options.file), data_root());
  const std::vector<sweep::Point> points = sweep::expand(spec);
  const std::vector<std::string> names = validate(spec, points, options.quiet);
  if (options.check) {
    std::printf("sweep %s: valid, %zu points x %zu workloads = %zu jobs\n", spec.name.c_str(), points.size(),
                spec.workloads.size(), points.size() * spec.workloads.size());
    return 0;
  }

  sweep::RunSettings settings;
  // The child of a fork runs its own image again: the very binary of this sweep, even if a rebuild has
  // replaced the file since.
  settings.binary = "/proc/self/exe";
  settings.out_dir = options.out_dir;
  settings.jobs = options.jobs;
  settings.point_timeout_s = options.point_timeout_s;
  settings.shard = shard;
  settings.stop = &g_stop;
  settings.progress = progress_printer(options.quiet);
  StopOnSignal stop_on_signal;
  const sweep::Outcome outcome = sweep::run_sweep(spec, points, names, settings);
  if (outcome.interrupted) {
    if (!options.quiet && ::isatty(STDERR_FILENO)) std::fprintf(stderr, "\n");
    std::fprintf(stderr, "tessera: sweep %s interrupted; run the same command again to resume\n",
                 spec.name.c_str());
    return 130;
  }
  std::printf(
      "sweep %s: %zu points, %zu jobs in shard %s (%zu finished earlier), %zu failed, %zu numerics "
      "mismatches: %s/results.csv\n",
      spec.name.c_str(), points.size(), outcome.jobs, shard.text().c_str(), outcome.skipped, outcome.failed,
      outcome.mismatched, options.out_dir.c_str());
  return outcome.failed + outcome.mismatched == 0 ? 0 : 1;
}

int sweep_merge_command(const std::vector<std::string>& shard_dirs, const std::string& out_dir) {
  sweep::merge_shards(shard_dirs, out_dir);
  std::printf("merged %zu shard folders: %s/results.csv\n", shard_dirs.size(), out_dir.c_str());
  return 0;
}

}  // namespace tessera::cli
