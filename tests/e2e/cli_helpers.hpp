// Small helpers for tests that drive the tessera command: a scratch folder, files in and out, JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tessera {

// A fresh folder under the system temp dir, removed with everything in it when the object goes.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);
bool exists(const std::string& path);
std::string shipped(const std::string& relative);  // a path under the source tree's configs/

// The report with every host_seconds key removed (the one thing allowed to differ between identical runs).
nlohmann::json without_host_seconds(nlohmann::json json);

// The shipped mesh4x4 machine's text with its `vector: {...}` line replaced by `vector`.
std::string mesh4x4_with_vector(const std::string& vector);
// Runs the one op `op_line` (a workload entry) on the machine text through the command, timing only;
// returns report.json.
nlohmann::json run_report(const std::string& machine, const std::string& op_line);
// The share of the PE arrays' time (all cores) spent on `cause` in a run of report.json.
double pe_share(const nlohmann::json& run, const std::string& cause);

}  // namespace tessera
