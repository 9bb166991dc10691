// Runs a sweep's jobs (point x workload) as `tessera run` processes, N at a time, into an output folder:
//   DIR/sweep.json                         what the folder holds (identity, points, shard, complete)
//   DIR/points/<id>/<workload>/report.json  a finished job's report (written whole: rename)
//   DIR/points/<id>/<workload>/failure.json a failed job's status and message
//   DIR/results.csv                         streamed as jobs end, rewritten in point order at the end
// A job with a finished record is skipped when the same command runs again (resume); a killed, crashed or
// timed-out one is run again. Library code: progress goes to a callback, the caller prints.
#pragma once

#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "sweep/results.hpp"
#include "sweep/sweep_spec.hpp"

namespace tessera::sweep {

struct Shard {
  int index = 0;
  int count = 1;
  bool selects(const Point& point) const {
    return point.index % static_cast<size_t>(count) == static_cast<size_t>(index);
  }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// What a sweep folder's sweep.json records; `identity` hashes the sweep file's meaning and the machine and
// workload files' text, so a folder of another sweep is never resumed or merged into this one.
struct Manifest {
  std::string name;
  std::string identity;
  size_t points = 0;
  std::string shard;  // "i/N", or "merged"
  bool complete = false;
};

struct Progress {
  size_t jobs = 0;     // in this run's selection
  size_t skipped = 0;  // finished by an earlier run
  size_t done = 0;     // ended in this run (including failed)
  size_t failed = 0;
  double elapsed_s = 0;
  double eta_s = -1;  // -1: not known yet
  // The job that just ended; null in the first report, before any has
  const Point* point = nullptr;
  std::string workload;
  std::string status;
  std::string summary;  // "12345 cycles" or the message
};

struct RunSettings {
  std::string binary;  // the tessera binary each job runs
  std::string out_dir;
  int jobs = 1;
  double point_timeout_s = 0;  // 0: none
  Shard shard;
  const volatile std::sig_atomic_t* stop = nullptr;  // set (by a signal handler): kill the jobs, return
  std::function<void(const Progress&)> progress;
};

struct Outcome {
  size_t jobs = 0, skipped = 0, failed = 0, mismatched = 0;
  bool interrupted = false;
};

// The identity of a sweep: its points' ids, settings, and the text of the files it reads.
std::string sweep_identity(const SweepSpec& spec, const std::vector<Point>& points);

Outcome run_sweep(const SweepSpec& spec, const std::vector<Point>& points,
                  const std::vector<std::string>& workload_names, const RunSettings& settings);

// Merges shard folders of one sweep into `out_dir`/results.csv, the same bytes as one run of every point.
void merge_shards(const std::vector<std::string>& shard_dirs, const std::string& out_dir);

}  // namespace tessera::sweep
