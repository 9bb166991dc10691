#include "sweep/runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "common/text.hpp"
#include "traces/atomic_file.hpp"

namespace tessera::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kManifest = "sweep.json";
constexpr const char* kTool = "tessera sweep";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

[[noreturn]] void fail(const std::string& where, const std::string& field, const std::string& message,
                       const std::string& hint = "") {
  throw InputError(SourceLocation{where, 0, 0}, field, message, hint);
}

std::string manifest_text(const Manifest& manifest) {
  json out = {{"tool", kTool},
              {"name", manifest.name},
              {"identity", manifest.identity},
              {"points", manifest.points},
              {"shard", manifest.shard},
              {"complete", manifest.complete}};
  return out.dump(2) + "\n";
}

// The manifest of a sweep folder; `required`: a folder without one is an error, else an empty folder or none
// gives an empty manifest.
Manifest read_manifest(const std::string& dir, const std::string& field, bool required) {
  std::error_code error;
  const std::string path = (fs::path(dir) / kManifest).string();
  if (!fs::exists(path, error)) {
    if (required)
      fail(dir, field, "is not a sweep folder (no sweep.json)", "name folders tessera sweep wrote");
    if (fs::exists(dir, error) && !fs::is_directory(dir, error))
      fail(dir, field, "exists and is not a folder", "give --out a folder");
    if (fs::exists(dir, error) && !fs::is_empty(dir, error))
      fail(dir, field, "holds files tessera sweep did not write", "give --out a new or empty folder");
    return {};
  }
  try {
    const json in = json::parse(read_file(path));
    if (in.at("tool") != kTool) throw std::runtime_error("not a sweep's");
    return Manifest{in.at("name"), in.at("identity"), in.at("points"), in.at("shard"), in.at("complete")};
  } catch (const std::exception&) {
    fail(path, field, "is not a sweep.json tessera sweep wrote", "give --out a new or empty folder");
  }
}

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string line;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      line += text[i];
      continue;
    }
    line += !line.empty() && line.back() == ':' ? " " : "; ";
    while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
  }
  if (line.rfind("error: ", 0) == 0) line = line.substr(7);
  return line;
}

struct Job {
  const Point* point;
  size_t workload;
  std::string dir;
};

struct Running {
  size_t index;  // into the sweep's jobs
  Job job;
  pid_t pid;
  Clock::time_point started;
  bool timed_out = false;
};

std::string record_path(const Job& job, const char* file) {
  return (fs::path(job.dir) / file).string();
}

// A finished or failed job's record on disk; status "" when it has none.
JobRecord stored_record(const Job& job) {
  std::error_code error;
  if (fs::exists(record_path(job, "report.json"), error))
    return record_of_report(read_file(record_path(job, "report.json")));
  if (fs::exists(record_path(job, "failure.json"), error)) {
    try {
      const json in = json::parse(read_file(record_path(job, "failure.json")));
      return JobRecord{in.at("status"), in.at("message"), {}};
    } catch (const std::exception&) {
    }
  }
  return {};
}

pid_t start(const Job& job, const SweepSpec& spec, const std::string& binary) {
  traces::ensure_directory(job.dir);
  std::vector<std::string> arguments = worker_arguments(spec, *job.point, job.workload);
  arguments.insert(arguments.begin(), binary);
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const std::string out = record_path(job, "stdout.part"), err = record_path(job, "stderr.part");
  const pid_t pid = ::fork();
  if (pid < 0) fail(job.dir, "--jobs", std::string("cannot start a process: ") + std::strerror(errno));
  if (pid == 0) {
    // The child: dies with the sweep (a killed sweep leaves no orphan), prints into the job's folder.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || err_fd < 0) ::_exit(126);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// How the process of `running` ended, as a record; the report moves into place.
JobRecord finish(const Running& running, int wait_status, double timeout_s) {
  const Job& job = running.job;
  const std::string out = record_path(job, "stdout.part"), err = record_path(job, "stderr.part");
  const std::string message = one_line(read_file(err));
  JobRecord record;
  if (running.timed_out) {
    record = {"timeout", fmt::format("ran past --point-timeout {} s and was stopped", timeout_s), {}};
  } else if (WIFSIGNALED(wait_status)) {
    const int signal = WTERMSIG(wait_status);
    record = {"killed",
              fmt::format("killed by signal {} ({}){}", signal, ::strsignal(signal),
                          message.empty() ? "" : ": " + message),
              {}};
  } else if (WEXITSTATUS(wait_status) == 0 || WEXITSTATUS(wait_status) == 1) {
    const std::string report = read_file(out);
    record = record_of_report(report);
    if (record.status == "ok" || record.status == "mismatch")
      traces::write_file_atomically(record_path(job, "report.json"), report);
  } else if (WEXITSTATUS(wait_status) == 2) {
    record = {"invalid", message, {}};
  } else {
    record = {
        "crashed",
        fmt::format("exit status {}{}", WEXITSTATUS(wait_status), message.empty() ? "" : ": " + message),
        {}};
  }
  std::error_code error;
  if (record.status == "ok" || record.status == "mismatch") {
    fs::remove(record_path(job, "failure.json"), error);
  } else {
    const json failure = {{"status", record.status}, {"message", record.message}};
    traces::write_file_atomically(record_path(job, "failure.json"), failure.dump(2) + "\n");
  }
  fs::remove(out, error);
  fs::remove(err, error);
  return record;
}

std::string summary_of(const JobRecord& record) {
  if (record.status != "ok" && record.status != "mismatch") return record.message;
  return fmt::format("{} cycles", record.report.at("totals").at("cycles").get<int64_t>());
}

void append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << text;
  out.flush();
}

}  // namespace

std::string sweep_identity(const SweepSpec& spec, const std::vector<Point>& points) {
  std::string described = spec.name + "\n" + read_file(spec.arch_path());
  for (size_t w = 0; w < spec.workloads.size(); ++w) described += read_file(spec.workload_path(w));
  for (const Axis& axis : spec.axes) described += axis.path + "\n";
  for (const Point& point : points) described += point.id + "\n";
  return fmt::format("{:016x}", stable_hash(described));
}

Outcome run_sweep(const SweepSpec& spec, const std::vector<Point>& points,
                  const std::vector<std::string>& workload_names, const RunSettings& settings) {
  const std::string& dir = settings.out_dir;
  const std::string identity = sweep_identity(spec, points);
  const Manifest existing = read_manifest(dir, "--out", false);
  if (!existing.identity.empty() && existing.identity != identity)
    fail(dir, "--out",
         fmt::format("holds another sweep ('{}', or this one before its files changed)", existing.name),
         "give --out a new folder, or remove this one to start again");
  if (existing.shard == "merged") fail(dir, "--out", "holds merged results", "give --out a new folder");
  traces::ensure_directory(dir);
  Manifest manifest{spec.name, identity, points.size(), settings.shard.text(), false};
  traces::write_file_atomically((fs::path(dir) / kManifest).string(), manifest_text(manifest));

  // Every job of the shard, in point order; the rows of those already finished.
  std::vector<Job> jobs;
  for (const Point& point : points) {
    if (!settings.shard.selects(point)) continue;
    for (size_t w = 0; w < spec.workloads.size(); ++w)
      jobs.push_back(Job{&point, w, (fs::path(dir) / "points" / point.id / spec.workload_stems[w]).string()});
  }
  std::vector<std::string> rows(jobs.size());
  std::deque<size_t> pending;
  const std::string csv_path = (fs::path(dir) / "results.csv").string();
  std::string streamed = csv_header(spec);
  Outcome outcome;
  outcome.jobs = jobs.size();
  for (size_t j = 0; j < jobs.size(); ++j) {
    const JobRecord record = stored_record(jobs[j]);
    if (!record.finished()) {
      pending.push_back(j);
      continue;
    }
    rows[j] = csv_rows(spec, *jobs[j].point, workload_names[jobs[j].workload], record);
    streamed += rows[j];
    ++outcome.skipped;
    outcome.mismatched += record.status == "mismatch";
    outcome.failed += record.status == "invalid";
  }
  traces::write_file_atomically(csv_path, streamed);

  Progress progress;
  progress.jobs = jobs.size();
  progress.skipped = outcome.skipped;
  const size_t to_run = pending.size();
  if (settings.progress) settings.progress(progress);  // the start: no job has ended
  const auto began = Clock::now();
  std::map<pid_t, Running> running;
  auto stopping = [&] { return settings.stop && *settings.stop; };
  while ((!pending.empty() || !running.empty()) && !stopping()) {
    while (!pending.empty() && static_cast<int>(running.size()) < settings.jobs && !stopping()) {
      const Job& job = jobs[pending.front()];
      const pid_t pid = start(job, spec, settings.binary);
      running.emplace(pid, Running{pending.front(), job, pid, Clock::now()});
      pending.pop_front();
    }
    bool reaped = false;
    for (auto it = running.begin(); it != running.end();) {
      Running& job = it->second;
      int status = 0;
      const pid_t done = ::waitpid(job.pid, &status, WNOHANG);
      if (done == 0) {
        const double ran_s = std::chrono::duration<double>(Clock::now() - job.started).count();
        if (settings.point_timeout_s > 0 && ran_s > settings.point_timeout_s && !job.timed_out) {
          job.timed_out = true;
          ::kill(job.pid, SIGKILL);
        }
        ++it;
        continue;
      }
      if (stopping()) break;  // a job the interrupt killed is not a result
      const JobRecord record = finish(job, status, settings.point_timeout_s);
      const size_t index = job.index;
      rows[index] = csv_rows(spec, *job.job.point, workload_names[job.job.workload], record);
      append(csv_path, rows[index]);
      const bool failed = record.status != "ok" && record.status != "mismatch";
      outcome.failed += failed;
      outcome.mismatched += record.status == "mismatch";
      ++progress.done;
      progress.failed += failed;
      progress.elapsed_s = std::chrono::duration<double>(Clock::now() - began).count();
      const size_t left = to_run - progress.done;
      progress.eta_s = progress.elapsed_s / static_cast<double>(progress.done) * static_cast<double>(left);
      progress.point = job.job.point;
      progress.workload = workload_names[job.job.workload];
      progress.status = record.status;
      progress.summary = summary_of(record);
      if (settings.progress) settings.progress(progress);
      it = running.erase(it);
      reaped = true;
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (stopping()) {
    // Interrupted: stop the jobs in flight and keep nothing of them; the next run starts them again.
    for (auto& [pid, job] : running) ::kill(pid, SIGKILL);
    for (auto& [pid, job] : running) {
      ::waitpid(pid, nullptr, 0);
      std::error_code error;
      fs::remove(record_path(job.job, "stdout.part"), error);
      fs::remove(record_path(job.job, "stderr.part"), error);
    }
    outcome.interrupted = true;
    return outcome;
  }
  std::string csv = csv_header(spec);
  for (const std::string& rows_of_job : rows) csv += rows_of_job;
  traces::write_file_atomically(csv_path, csv);
  manifest.complete = true;
  traces::write_file_atomically((fs::path(dir) / kManifest).string(), manifest_text(manifest));
  return outcome;
}

void merge_shards(const std::vector<std::string>& shard_dirs, const std::string& out_dir) {
  Manifest first;
  std::string header;
  std::map<size_t, std::pair<std::string, std::string>> rows_of_point;  // point -> rows, shard folder
  for (const std::string& dir : shard_dirs) {
    const Manifest manifest = read_manifest(dir, "sweep-merge", true);
    if (first.identity.empty()) first = manifest;
    if (manifest.identity != first.identity)
      fail(dir, "sweep-merge", fmt::format("is a shard of another sweep than {}", shard_dirs.front()),
           "merge the shard folders of one sweep file, run from the same machine and workload files");
    if (!manifest.complete)
      fail(dir, "sweep-merge", fmt::format("shard {} has not finished", manifest.shard),
           "run its tessera sweep command again: it resumes");
    std::istringstream csv(read_file((fs::path(dir) / "results.csv").string()));
    std::string line;
    std::getline(csv, line);
    if (header.empty()) header = line;
    if (line != header) fail(dir, "sweep-merge", "its results.csv has other columns than the first shard's");
    std::map<size_t, std::string> here;
    for (int row = 2; std::getline(csv, line); ++row) {
      // Each row starts with its point's index, one of the sweep's: a row that does not was not written by
      // tessera sweep (a truncated file, a hand edit).
      const std::string first_cell = line.substr(0, line.find(','));
      const std::optional<uint64_t> point = parse_count(first_cell);
      if (!point || *point >= first.points)
        throw InputError(SourceLocation{(fs::path(dir) / "results.csv").string(), row, 1}, "sweep-merge",
                         fmt::format("the row does not start with a point of this {}-point sweep ('{}')",
                                     first.points, first_cell.substr(0, 40)),
                         "a shard's results.csv is tessera sweep's: run the shard again to write it anew");
      here[static_cast<size_t>(*point)] += line + "\n";
    }
    for (auto& [point, rows] : here) {
      const auto [at, added] = rows_of_point.emplace(point, std::make_pair(rows, dir));
      if (!added)
        fail(dir, "sweep-merge", fmt::format("point {} is also in {}", point, at->second.second),
             "name each shard folder once; shards i/N of one N do not overlap");
    }
  }
  std::vector<size_t> missing;
  for (size_t point = 0; point < first.points; ++point)
    if (!rows_of_point.count(point)) missing.push_back(point);
  if (!missing.empty()) {
    std::string listed;
    for (size_t i = 0; i < missing.size() && i < 8; ++i)
      listed += (i ? ", " : "") + std::to_string(missing[i]);
    fail(shard_dirs.front(), "sweep-merge",
         fmt::format("{} of {} points are in no shard (points {}{})", missing.size(), first.points, listed,
                     missing.size() > 8 ? ", ..." : ""),
         "name every shard folder of the sweep");
  }
  const Manifest existing = read_manifest(out_dir, "--out", false);
  if (!existing.identity.empty() && (existing.identity != first.identity || existing.shard != "merged"))
    fail(out_dir, "--out", "holds a sweep's results that a merge would replace",
         "give --out a new folder, or the folder of an earlier merge of these shards");
  traces::ensure_directory(out_dir);
  std::string csv = header + "\n";
  for (const auto& [point, rows] : rows_of_point) csv += rows.first;
  traces::write_file_atomically((fs::path(out_dir) / "results.csv").string(), csv);
  Manifest merged{first.name, first.identity, first.points, "merged", true};
  traces::write_file_atomically((fs::path(out_dir) / kManifest).string(), manifest_text(merged));
}

}  // namespace tessera::sweep
