#include "e2e/run_tessera.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>

namespace tessera {

namespace {
std::string quote(const std::string& argument) {
  std::string quoted = "'";
  for (char c : argument) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}
}  // namespace

CommandResult run_command(const std::string& command_line) {
  CommandResult result;
  FILE* pipe = popen((command_line + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  size_t read = 0;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), read);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

CommandResult run_tessera(const std::vector<std::string>& arguments) {
  std::string command = std::string("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ") + TESSERA_BINARY;
  for (const auto& argument : arguments) command += " " + quote(argument);
  return run_command(command);
}

}  // namespace tessera
