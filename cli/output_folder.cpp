#include "cli/output_folder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/error.hpp"
#include "traces/atomic_file.hpp"

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;

// Every folder tessera commits holds this file: a later --out to the same folder may replace it.
constexpr const char* kMarker = ".tessera-out";

[[noreturn]] void fail(const fs::path& where, const std::string& message, const std::string& hint = "") {
  throw InputError(SourceLocation{where.string(), 0, 0}, "--out", message, hint);
}

// `target`'s stage folders that no live process owns: left by a command killed while it wrote them.
void remove_stale_stages(const fs::path& parent, const std::string& prefix) {
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (pid_text.empty() || *end != '\0' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;  // still running
    std::error_code ignored;
    fs::remove_all(entry.path(), ignored);
  }
}

constexpr const char* kMarkerHeading =
    "written by tessera; --out may replace this folder and these files of it:";

// The marker's text: its heading, then the names of the files the command wrote, one a line.
std::string marker_text(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string text = std::string(kMarkerHeading) + "\n";
  for (const auto& file : files) text += file.first + "\n";
  return text;
}

// The first entry (by name) of `folder` that its marker does not list as tessera's: "" when there is none.
// Without a marker (or with one of another form) every entry is foreign.
std::string first_foreign_entry(const fs::path& folder) {
  std::set<std::string> ours;
  if (std::ifstream marker(folder / kMarker); marker) {
    std::string line;
    if (std::getline(marker, line) && line == kMarkerHeading) {
      ours.insert(kMarker);
      while (std::getline(marker, line)) ours.insert(line);
    }
  }
  std::string first;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    const bool is_ours = ours.count(name) != 0 && entry.is_regular_file(error) && !entry.is_symlink(error);
    if (!is_ours && (first.empty() || name < first)) first = name;
  }
  return first;
}

}  // namespace

void OutputFolder::add(const std::string& name, std::string contents) {
  if (enabled()) files_.emplace_back(name, std::move(contents));
}

struct OutputFolder::Target {
  fs::path path;
  bool exists = false;
};

OutputFolder::Target OutputFolder::target() const {
  std::error_code error;
  fs::path target = fs::absolute(directory_, error).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();  // "out/" -> "out"
  if (error || target.filename().empty() || target == target.root_path())
    fail(directory_, "is not a folder tessera can replace", "give --out a folder of its own");
  const bool exists = fs::exists(target, error);
  if (exists) {
    if (!fs::is_directory(target, error)) fail(target, "exists and is not a folder", "give --out a folder");
    // Only files tessera listed in its marker are replaced: a report.json or a .tprog may be anyone's, and a
    // file someone put into tessera's folder is theirs.
    if (const std::string foreign = first_foreign_entry(target); !foreign.empty())
      fail(target, fmt::format("holds files tessera did not write ({} is in the way)", foreign),
           "give --out a new or empty folder, or one an earlier tessera command wrote as it left it");
  }
  return Target{target, exists};
}

void OutputFolder::check() const {
  if (!enabled()) return;
  const Target target = this->target();
  // A run of minutes must not end in "cannot write": create (and remove) a folder where commit will write
  // its stage, which fails now on a read-only file system, /proc, or a folder we may not write to.
  fs::path existing = target.path.parent_path();
  std::error_code error;
  while (!existing.empty() && existing != existing.root_path() && !fs::exists(existing, error))
    existing = existing.parent_path();
  const fs::path probe =
      existing / ("." + target.path.filename().string() + ".tessera-stage." + std::to_string(::getpid()));
  if (::mkdir(probe.c_str(), 0700) != 0)
    fail(target.path,
         fmt::format("cannot be written: creating a folder in {} fails ({})", existing.string(),
                     std::strerror(errno)),
         "give --out a folder on a writable file system that you may write to");
  ::rmdir(probe.c_str());
}

void OutputFolder::commit() const {
  if (!enabled()) return;
  std::error_code error;
  const auto [target, exists] = this->target();
  const fs::path parent = target.parent_path();
  traces::ensure_directory(parent.string());
  // The new folder is written beside the target, then swapped in whole: a reader (or a command killed at any
  // point) sees the old folder or the new one, never a mix.
  const std::string prefix = "." + target.filename().string() + ".tessera-stage.";
  remove_stale_stages(parent, prefix);
  const fs::path stage = parent / (prefix + std::to_string(::getpid()));
  fs::remove_all(stage, error);
  if (!fs::create_directory(stage, error) || error)
    fail(target, "cannot create the folder beside it to write into: " + error.message());
  try {
    for (const auto& [name, contents] : files_)
      traces::write_file_atomically((stage / name).string(), contents);
    traces::write_file_atomically((stage / kMarker).string(), marker_text(files_));
  } catch (...) {
    fs::remove_all(stage, error);
    throw;
  }
  if (!exists && ::rename(stage.c_str(), target.c_str()) == 0) return;
  // The target exists: exchange the two folders in one step, then remove the old one.
  if (::renameat2(AT_FDCWD, stage.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
    const std::string reason = std::strerror(errno);
    fs::remove_all(stage, error);
    fail(target, "cannot move the finished folder into place: " + reason);
  }
  fs::remove_all(stage, error);
}

}  // namespace tessera::cli
