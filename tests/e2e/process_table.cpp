#include "e2e/process_table.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera {

std::vector<ProcessEntry> process_table() {
  std::vector<ProcessEntry> table;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    // pid (comm) state ppid pgrp ...: comm may hold blanks and parentheses, so read after the last ')'.
    if (!std::getline(stat, line) || line.rfind(')') == std::string::npos) continue;
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    ProcessEntry process;
    process.pid = static_cast<pid_t>(std::stol(name));
    fields >> process.state >> process.parent >> process.group;
    // Then session, tty, tty group, flags, four fault counts, user and system time.
    std::string skipped;
    for (int i = 0; i < 8; ++i) fields >> skipped;
    long user_ticks = 0;
    long system_ticks = 0;
    fields >> user_ticks >> system_ticks;
    process.cpu_ticks = user_ticks + system_ticks;
    if (fields) table.push_back(process);
  }
  return table;
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> found;
  for (const ProcessEntry& process : process_table())
    if (process.parent == parent && process.state != 'Z') found.push_back(process.pid);
  return found;
}

}  // namespace tessera
