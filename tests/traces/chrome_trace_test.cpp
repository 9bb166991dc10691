// The Chrome trace is written as text as it goes (traces/chrome_trace.cpp): it must be the same document as
// the one built as a nlohmann::json tree and dumped, which is how it was written before — every number the
// same double, every string the same bytes, for names that need escaping and times of every magnitude — and
// laid out the same, byte for byte, wherever the two print a number with the same digits.
#include "traces/chrome_trace.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace tessera::traces {
namespace {

std::string as_json_tree(const std::vector<TraceTrack>& tracks, const std::vector<TraceInterval>& intervals) {
  using Json = nlohmann::ordered_json;
  Json events = Json::array();
  std::vector<int> named;
  for (const TraceTrack& track : tracks) {
    if (std::find(named.begin(), named.end(), track.process) == named.end()) {
      named.push_back(track.process);
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

// The same document: parsed, every number the same double (exactly) and every string the same bytes.
void expect_same_document(const std::string& written, const std::string& dumped) {
  ASSERT_FALSE(written.empty());
  EXPECT_EQ(written.back(), '\n');
  EXPECT_TRUE(nlohmann::ordered_json::parse(written) == nlohmann::ordered_json::parse(dumped))
      << "the written trace and the dumped tree are different documents";
}

TEST(ChromeTrace, TheSameBytesAsTheDocumentTreeDumped) {
  const std::vector<TraceTrack> tracks = {{0, 0, "core 0,0", "pe"},
                                          {0, 3, "core 0,0", "dma0"},
                                          {5, 1, "core \"1\",1\\", "vec\ttab"},
                                          {5, 2, "c\x01\x1f\x7f é", "noc"}};
  std::vector<TraceInterval> intervals = {
      {0, 0.0, 0.001, "pe os a=0x0 w=0x8000 m=64 n=128 k=128", "busy", "qkv"},
      {1, 100.0, 1e-5, "dma0 load A[0:64, 0:128] -> 0x0 to 0,0 0,1 ; wait a_free[0]*4", "busy", "op\n\r\b\f"},
      {2, 12345.678, 0.5, "input_starvation", "input_starvation", ""},
      {3, 1e14, 1e16, "x", "sync", "y"},
      {3, -0.0, 5e-5, "x", "sync", "y"},
      {0, 123456.78901234567, 0.00012, "vec softmax", "busy", "attn"}};
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int64_t> ticks(0, int64_t{1} << 40);
  for (int i = 0; i < 2000; ++i) {
    const double us_per_tick = 1.0 / (1.0 * 1000.0 * 1000.0);  // 1 GHz, 1000 ticks a cycle
    intervals.push_back({i % 4, static_cast<double>(ticks(random)) * us_per_tick,
                         static_cast<double>(ticks(random) % 100000) * us_per_tick, "n", "busy", "o"});
  }
  // Where both print a number with the same digits (all but a few of the random times), the same bytes.
  const std::vector<TraceInterval> named(intervals.begin(), intervals.begin() + 6);
  EXPECT_EQ(to_chrome_trace(tracks, named), as_json_tree(tracks, named));
  expect_same_document(to_chrome_trace(tracks, intervals), as_json_tree(tracks, intervals));
  EXPECT_EQ(to_chrome_trace({}, {}), as_json_tree({}, {}));
}

}  // namespace
}  // namespace tessera::traces
