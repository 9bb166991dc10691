// The machine's processes as /proc lists them, for tests that check what a run leaves behind or find the
// worker a command started (signals, sweeps, parallel runs).
#pragma once

#include <sys/types.h>

#include <vector>

namespace tessera {

struct ProcessEntry {
  pid_t pid = 0;
  char state = 0;  // 'R', 'S', ... 'Z' for a zombie
  pid_t parent = 0;
  pid_t group = 0;
  long cpu_ticks = 0;  // user + system, in clock ticks
};

// Every process readable now (one that ends while it is read is left out).
std::vector<ProcessEntry> process_table();

// The live (not zombie) children of `parent`.
std::vector<pid_t> children_of(pid_t parent);

}  // namespace tessera
