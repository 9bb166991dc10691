// Input files are checked before they are read (common/files.hpp): a FIFO or a device would be read without
// end, a file past its kind's cap for minutes; each is a located error naming the path, and nothing blocks.
#include "common/files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"

namespace tessera {
namespace {

const FileKind kYaml{"a YAML file", 1024, "name a file in it", "file", "check the path"};

std::string error_of(const std::string& path) {
  try {
    read_input_file(path, kYaml);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(InputFiles, AFifoADeviceAFolderAndAFilePastTheCapAreRefusedBeforeTheyAreRead) {
  char folder_template[] = "/tmp/tessera-files-XXXXXX";
  const std::string folder = ::mkdtemp(folder_template);
  const std::string fifo = folder + "/fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer: opening it would block for ever; it is refused before.
  EXPECT_EQ(error_of(fifo).rfind(
                fifo + ": is not a regular file (a device, a FIFO or a socket), not a YAML file", 0),
            0u)
      << error_of(fifo);
  EXPECT_EQ(error_of("/dev/zero").rfind("/dev/zero: is not a regular file", 0), 0u);
  EXPECT_EQ(error_of(folder).rfind(folder + ": is a folder, not a YAML file\n  hint: name a file in it", 0),
            0u);
  const std::string big = folder + "/big.yaml";
  std::ofstream(big) << std::string(1025, 'a');
  EXPECT_EQ(error_of(big).rfind(big + ": is 1025 bytes, more than tessera reads of a YAML file (0 MiB)", 0),
            0u)
      << error_of(big);
  const std::string fits = folder + "/fits.yaml";
  std::ofstream(fits) << std::string(1024, 'a');
  EXPECT_EQ(read_input_file(fits, kYaml), std::string(1024, 'a'));
  EXPECT_EQ(error_of(folder + "/none.yaml"),
            folder + "/none.yaml: cannot open file: No such file or directory\n  hint: check the path");
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace tessera
