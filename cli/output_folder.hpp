// The files of one command's --out folder, collected in memory and written only once the command has
// succeeded, each atomically: a failed run leaves no half-written report (DESIGN.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tessera::cli {

class OutputFolder {
 public:
  explicit OutputFolder(std::string directory) : directory_(std::move(directory)) {}
  bool enabled() const { return !directory_.empty(); }
  void add(const std::string& name, std::string contents);
  void commit() const;

 private:
  std::string directory_;
  std::vector<std::pair<std::string, std::string>> files_;
};

}  // namespace tessera::cli
