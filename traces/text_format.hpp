// How numbers read in the terminal table: thousands grouped, bytes as MB.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::traces {

std::string grouped(int64_t value);    // 12,345,678
std::string megabytes(int64_t bytes);  // 12.35

}  // namespace tessera::traces
