#include "traces/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"

namespace tessera::traces {

void ensure_directory(const std::string& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    throw InputError(SourceLocation{directory, 0, 0}, "--out",
                     "cannot create the output folder: " + error.message());
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw InputError(SourceLocation{path, 0, 0}, "--out",
                       std::string("cannot write: ") + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      throw InputError(SourceLocation{path, 0, 0}, "--out",
                       std::string("write failed: ") + std::strerror(errno));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw InputError(SourceLocation{path, 0, 0}, "--out",
                     "cannot move the finished file into place: " + reason);
  }
}

}  // namespace tessera::traces
