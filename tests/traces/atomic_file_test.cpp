#include "traces/atomic_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace tessera::traces {

TEST(AtomicFile, WritesTheWholeFileAndLeavesNoTemporary) {
  const auto folder =
      std::filesystem::temp_directory_path() / ("tessera-atomic-" + std::to_string(::getpid()));
  ensure_directory(folder.string());
  const auto path = (folder / "report.json").string();
  write_file_atomically(path, "{\"cycles\": 1}\n");
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  EXPECT_EQ(contents.str(), "{\"cycles\": 1}\n");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++entries;
  EXPECT_EQ(entries, 1);
  std::filesystem::remove_all(folder);
}

TEST(AtomicFile, UnwritableFolderIsAnInputError) {
  EXPECT_THROW(write_file_atomically("/proc/tessera-cannot-write/report.json", "x"), InputError);
}

}  // namespace tessera::traces
