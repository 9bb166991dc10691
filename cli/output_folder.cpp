#include "cli/output_folder.hpp"

#include "traces/atomic_file.hpp"

namespace tessera::cli {

void OutputFolder::add(const std::string& name, std::string contents) {
  if (enabled()) files_.emplace_back(name, std::move(contents));
}

void OutputFolder::commit() const {
  if (!enabled()) return;
  traces::ensure_directory(directory_);
  for (const auto& [name, contents] : files_)
    traces::write_file_atomically(directory_ + "/" + name, contents);
}

}  // namespace tessera::cli
