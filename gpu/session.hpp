// One run of the GPU reference runner: the device, its clocks, every op measured in turn, and at the end the
// ceilings, the roofline floors and the files (an op's record, run.json). The standalone program
// (runner_main.cu) and the C API the PyTorch A/B driver loads (capi.cu) are both a Session.
#pragma once

#include <string>
#include <vector>

#include "gpu/runner.hpp"

namespace tessera::gpu {

struct Clocks {
  unsigned sm_mhz = 0, memory_mhz = 0;
};

class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  RunContext& context() { return context_; }
  // Measures one op (an OpArgs text); its measurement stays until finish() (live paths until released).
  OpMeasurement& measure(const std::string& op_text);
  OpMeasurement& measurement(size_t index) { return measurements_.at(index); }
  size_t size() const { return measurements_.size(); }
  // The ceilings (unless skipped), the roofline floors, and every op's record plus run.json in out_dir.
  void finish(const std::string& out_dir, const std::string& command, bool skip_ceilings);

 private:
  struct Nvml;
  RunContext context_;
  std::unique_ptr<Nvml> nvml_;
  Clocks idle_;
  std::vector<OpArgs> ops_;
  std::vector<OpMeasurement> measurements_;
};

void write_file(const std::string& path, const std::string& text);

}  // namespace tessera::gpu
