// The files of one command's --out folder, collected in memory and written only once the command has
// succeeded (DESIGN.md), as a whole: into a folder beside the target, which is then renamed into place or
// exchanged with the old one in one step (renameat2 RENAME_EXCHANGE), so that a reader, or a command killed
// at any point, sees the old folder or the new one, never a mix, and no file of an earlier run stays. The
// marker file .tessera-out lists the files tessera wrote: a folder holding anything else (a file of the
// user's beside a report.json of theirs, or added to tessera's folder) is refused before the run, naming
// the file in the way, never replaced. A stage folder left by a killed command is removed by the next
// commit beside it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tessera::cli {

class OutputFolder {
 public:
  explicit OutputFolder(std::string directory) : directory_(std::move(directory)) {}
  bool enabled() const { return !directory_.empty(); }
  // Refuses, before any work, a target that commit would refuse (a file, a folder holding someone else's
  // files, a root) or could not write (a read-only file system, /proc): a run of minutes must not end in
  // that error. commit checks again.
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
