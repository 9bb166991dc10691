#include "traces/chrome_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace tessera::traces {

namespace {

// JSON text written as it goes, laid out as nlohmann::json's dump() lays out the same document (no spaces; a
// double in its shortest round-trip form, ".0" after an integral one; strings escaped as dump() escapes
// them): a trace holds millions of events, and a document tree of them took seconds and gigabytes. (dump()'s
// Grisu2 digits are not always the shortest; fmt's are, so a number's text may differ, never its value.)
class JsonOut {
 public:
  explicit JsonOut(std::string& out) : out_(out) {}
  void raw(std::string_view text) { out_ += text; }
  void string(std::string_view text) {
    out_ += '"';
    for (const char c : text) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\b':
          out_ += "\\b";
          break;
        case '\f':
          out_ += "\\f";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20)
            fmt::format_to(std::back_inserter(out_), "\\u{:04x}", static_cast<unsigned>(c));
          else
            out_ += c;
      }
    }
    out_ += '"';
  }
  void integer(int64_t value) { fmt::format_to(std::back_inserter(out_), "{}", value); }
  void real(double value) {
    if (!std::isfinite(value)) {
      out_ += "null";
      return;
    }
    const size_t at = out_.size();
    fmt::format_to(std::back_inserter(out_), "{}", value);
    if (out_.find_first_of(".e", at) == std::string::npos) out_ += ".0";
  }

 private:
  std::string& out_;
};

}  // namespace

std::string to_chrome_trace(const std::vector<TraceTrack>& tracks,
                            const std::vector<TraceInterval>& intervals) {
  std::string text;
  text.reserve(64 + tracks.size() * 200 + intervals.size() * 160);
  JsonOut json(text);
  json.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  bool first = true;
  const auto next = [&] {
    if (!first) json.raw(",");
    first = false;
  };
  std::vector<int> named_processes;
  for (const TraceTrack& track : tracks) {
    if (std::find(named_processes.begin(), named_processes.end(), track.process) == named_processes.end()) {
      named_processes.push_back(track.process);
      next();
      json.raw("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
      json.integer(track.process);
      json.raw(",\"args\":{\"name\":");
      json.string(track.process_name);
      json.raw("}},{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":");
      json.integer(track.process);
      json.raw(",\"args\":{\"sort_index\":");
      json.integer(track.process);
      json.raw("}}");
    }
    next();
    json.raw("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
    json.integer(track.process);
    json.raw(",\"tid\":");
    json.integer(track.thread);
    json.raw(",\"args\":{\"name\":");
    json.string(track.thread_name);
    json.raw("}}");
  }
  for (const TraceInterval& interval : intervals) {
    const TraceTrack& track = tracks.at(static_cast<size_t>(interval.track));
    next();
    json.raw("{\"name\":");
    json.string(interval.name);
    json.raw(",\"cat\":");
    json.string(interval.category);
    json.raw(",\"ph\":\"X\",\"ts\":");
    json.real(interval.start_us);
    json.raw(",\"dur\":");
    json.real(interval.duration_us);
    json.raw(",\"pid\":");
    json.integer(track.process);
    json.raw(",\"tid\":");
    json.integer(track.thread);
    json.raw(",\"args\":{\"op\":");
    json.string(interval.op);
    json.raw(",\"state\":");
    json.string(interval.category);
    json.raw("}}");
  }
  json.raw("]}\n");
  return text;
}

}  // namespace tessera::traces
