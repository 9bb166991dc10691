#include "traces/chrome_trace.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tessera::traces {

std::string to_chrome_trace(const std::vector<TraceTrack>& tracks,
                            const std::vector<TraceInterval>& intervals) {
  using Json = nlohmann::ordered_json;
  Json events = Json::array();
  std::vector<int> named_processes;
  for (const TraceTrack& track : tracks) {
    if (std::find(named_processes.begin(), named_processes.end(), track.process) == named_processes.end()) {
      named_processes.push_back(track.process);
      events.push_back({{"name", "process_name"},
                        {"ph", "M"},
                        {"pid", track.process},
                        {"args", {{"name", track.process_name}}}});
      events.push_back({{"name", "process_sort_index"},
                        {"ph", "M"},
                        {"pid", track.process},
                        {"args", {{"sort_index", track.process}}}});
    }
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", track.process},
                      {"tid", track.thread},
                      {"args", {{"name", track.thread_name}}}});
  }
  for (const TraceInterval& interval : intervals) {
    const TraceTrack& track = tracks.at(static_cast<size_t>(interval.track));
    events.push_back({{"name", interval.name},
                      {"cat", interval.category},
                      {"ph", "X"},
                      {"ts", interval.start_us},
                      {"dur", interval.duration_us},
                      {"pid", track.process},
                      {"tid", track.thread},
                      {"args", {{"op", interval.op}, {"state", interval.category}}}});
  }
  Json trace;
  trace["displayTimeUnit"] = "ns";
  trace["traceEvents"] = events;
  return trace.dump() + "\n";
}

}  // namespace tessera::traces
