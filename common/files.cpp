#include "common/files.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace tessera {

std::string read_input_file(const std::string& path, const FileKind& kind) {
  namespace fs = std::filesystem;
  const SourceLocation where{path, 0, 0};
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status))
    throw InputError(where, "", fmt::format("is a folder, not {}", kind.what), kind.folder_hint);
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw InputError(where, "",
                     fmt::format("is not a regular file (a device, a FIFO or a socket), not {}", kind.what),
                     "tessera reads its inputs from files: save it to one first");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(where, "", fmt::format("cannot open {}: {}", kind.open_what, std::strerror(errno)),
                     kind.open_hint);
  const uintmax_t size = fs::file_size(path, error);
  if (!error && size > kind.max_bytes)
    throw InputError(where, "",
                     fmt::format("is {} bytes, more than tessera reads of {} ({} MiB)", size, kind.what,
                                 kind.max_bytes >> 20),
                     "split it, or check that this is the file you meant");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tessera
