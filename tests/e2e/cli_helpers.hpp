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

}  // namespace tessera
