// Runs the real tessera binary as a child process and captures what it prints: end-to-end tests exercise the
// command exactly as a user does.
#pragma once

#include <string>
#include <vector>

namespace tessera {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CommandResult run_tessera(const std::vector<std::string>& arguments);
CommandResult run_command(const std::string& command_line);

}  // namespace tessera
