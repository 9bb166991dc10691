#include "e2e/cli_helpers.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessera {

ScratchDir::ScratchDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tessera-test-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

std::string shipped(const std::string& relative) {
  return std::string(TESSERA_SOURCE_DIR) + "/configs/" + relative;
}

nlohmann::json without_host_seconds(nlohmann::json json) {
  if (json.is_object()) {
    json.erase("host_seconds");
    for (auto& [key, value] : json.items()) value = without_host_seconds(value);
  } else if (json.is_array()) {
    for (auto& value : json) value = without_host_seconds(value);
  }
  return json;
}

}  // namespace tessera
