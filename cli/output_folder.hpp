// The files of one command's --out folder, collected in memory and written only once the command has
// succeeded (DESIGN.md), as a whole: into a folder beside the target, which is then renamed into place or
// exchanged with the old one in one step (renameat2 RENAME_EXCHANGE), so that a reader, or a command killed
// at any point, sees the old folder or the new one, never a mix, and no file of an earlier run stays. A
// folder of files tessera did not write (no .tessera-out marker, no report.json) is refused, not replaced;
// a stage folder left by a killed command is removed by the next commit beside it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tessera::cli {

class OutputFolder {
 public:
  explicit OutputFolder(std::string directory) : directory_(std::move(directory)) {}
  bool enabled() const { return !directory_.empty(); }
  // Refuses, before any work, a target that commit would refuse (a file, a folder of someone else's files, a
  // root): a run of minutes must not end in that error. commit checks again.
  void check() const;
  void add(const std::string& name, std::string contents);
  void commit() const;

 private:
  struct Target;
  Target target() const;
  std::string directory_;
  std::vector<std::pair<std::string, std::string>> files_;
};

}  // namespace tessera::cli
