// Files under --out are written atomically (DESIGN.md, "Outputs and conventions"): to a temporary file in the
// same folder, then renamed over the target, so a failed run never leaves a half-written report.
#pragma once

#include <string>

namespace tessera::traces {

// Creates `directory` (and parents) if needed; throws InputError if it cannot.
void ensure_directory(const std::string& directory);

// Writes `contents` to `path` atomically; throws InputError if the folder is not writable.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace tessera::traces
