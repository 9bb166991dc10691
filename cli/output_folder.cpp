#include "cli/output_folder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
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
    // A folder of someone else's files is not ours to replace: only one tessera wrote, or an empty one.
    if (!fs::is_empty(target, error) && !fs::exists(target / kMarker, error) &&
        !fs::exists(target / "report.json", error))
      fail(target, "holds files tessera did not write",
           "give --out a new or empty folder, or one an earlier tessera command wrote");
  }
  return Target{target, exists};
}

void OutputFolder::check() const {
  if (enabled()) (void)target();
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
    traces::write_file_atomically((stage / kMarker).string(), "written by tessera; --out may replace it\n");
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
