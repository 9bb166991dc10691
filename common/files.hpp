// Input files are checked before they are read: reading a device (/dev/zero) or a FIFO would not end, and a
// file past its kind's cap would take minutes and gigabytes before any error (issue "hardening 2").
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

// The caps: a machine, workload or sweep file (YAML parses at about 1 s per MB; the largest shipped file is
// 8 KB, a workload of 100,000 ops about 6.5 MB), and a tile program (the MoE layers' run to 1.3 GB of text).
constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;
constexpr uint64_t kMaxProgramBytes = uint64_t{8} << 30;

struct FileKind {
  const char* what;         // "a YAML file", "a tile program"
  uint64_t max_bytes;       // kMaxConfigBytes, ...
  const char* folder_hint;  // when the path is a folder
  const char* open_what;    // "cannot open <open_what>: <reason>": "file", "tile program"
  const char* open_hint;    // then
};

// Reads the regular file at `path` whole, or throws InputError naming it: a folder, a device, a FIFO or a
// socket, a file that cannot be opened, or one larger than `kind.max_bytes`.
std::string read_input_file(const std::string& path, const FileKind& kind);

}  // namespace tessera
