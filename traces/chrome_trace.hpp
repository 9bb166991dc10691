// The Chrome trace event format (opens in Perfetto and chrome://tracing): one process per core, one thread
// per unit, each interval a complete event labelled with the instruction or the bubble cause.
#pragma once

#include <string>
#include <vector>

namespace tessera::traces {

struct TraceTrack {
  int process = 0;  // a core
  int thread = 0;   // a unit of that core
  std::string process_name;
  std::string thread_name;
};

struct TraceInterval {
  int track = 0;  // index into the tracks
  double start_us = 0;
  double duration_us = 0;
  std::string name;      // what the unit did: the instruction, or the cause of a bubble
  std::string category;  // busy, fill_drain, input_starvation, ...
  std::string op;        // the workload op it belongs to
};

std::string to_chrome_trace(const std::vector<TraceTrack>& tracks,
                            const std::vector<TraceInterval>& intervals);

}  // namespace tessera::traces
