// `tessera sweep` and `tessera sweep-merge` (issue 16): validate every point of a sweep file as `tessera run
// --set` would, run its jobs through sweep/, print progress and a summary.
#pragma once

#include <string>
#include <vector>

namespace tessera::cli {

struct SweepOptions {
  std::string file;
  std::string out_dir;
  int jobs = 1;
  double point_timeout_s = 0;
  std::string shard = "0/1";
  bool quiet = false;
  bool check = false;  // validate only: no --out, nothing runs
};

// 0: every job ran and passed; 1: some failed or mismatched (results.csv says which); 130: interrupted
// (SIGINT or SIGTERM; the same command resumes). Throws InputError for a bad sweep file or option.
int sweep_command(const SweepOptions& options);

int sweep_merge_command(const std::vector<std::string>& shard_dirs, const std::string& out_dir);

}  // namespace tessera::cli
