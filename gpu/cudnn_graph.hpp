// A convolution forward through cuDNN's graph (backend) API, the way PyTorch's conv2d reaches cuDNN: one
// CONVOLUTION_FORWARD operation in an operation graph over NHWC tensors (given by their strides), the engine
// configurations that heuristics mode A and then the fallback list propose, and an execution plan for each
// configuration that finalizes. The caller times the plans and keeps the fastest, as PyTorch's benchmark mode
// does (over at most 10; here up to 16 of mode A's and 4 more of the fallback list's; a wide search takes
// every configuration of modes A, instant, B and the fallback list, up to 64 each). cuDNN is opened at run
// time (cudnn_loader.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/cudnn_loader.hpp"
#include "gpu/runner.hpp"

namespace tessera::gpu::cudnn {

struct GraphConvShape {
  int64_t n = 1, c = 0, h = 0, w = 0;  // X, NHWC
  int64_t k = 0, r = 0, s = 0;         // W, KRSC with c / groups channels (cuDNN infers the groups)
  int64_t p = 0, q = 0;                // Y, NHWC
  int64_t groups = 1, stride = 1, pad = 0, dilation = 1;
  int x_type = kFloat, y_type = kFloat;  // DataType; W has X's; compute is always fp32
  bool allow_tf32 = false;               // fp32 operands: TF32 tensor-core engines allowed
};

// Owns one backend descriptor.
class Descriptor {
 public:
  Descriptor() = default;
  Descriptor(const Api& api, int type);
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept;
  Descriptor& operator=(Descriptor&& other) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  BackendDescriptor get() const { return descriptor_; }
  BackendDescriptor* address() { return &descriptor_; }
  Status status() const { return status_; }  // of the creation

 private:
  const Api* api_ = nullptr;
  BackendDescriptor descriptor_ = nullptr;
  Status status_ = 0;
};

class GraphConv {
 public:
  // Builds the graph and up to `heuristic_plans` execution plans of mode A's proposals, then up to
  // `fallback_plans` more of the fallback list's, spending at most `setup_seconds` on them. `wide`: every
  // configuration that modes A, instant, B and the fallback list propose (up to 64 each, repeats left out),
  // for up to 6 s.
  GraphConv(const Api& api, const GraphConvShape& shape, int heuristic_plans = 16, int fallback_plans = 4,
            double setup_seconds = 4, bool wide = false);
  GraphConv(const GraphConv&) = delete;
  GraphConv& operator=(const GraphConv&) = delete;

  int plans() const { return static_cast<int>(plans_.size()); }
  const std::string& note() const { return note_; }      // why there is no plan, or what was left out
  const std::string& search() const { return search_; }  // a wide search: the new plans of each mode
  int configurations_seen() const { return seen_; }
  const std::string& description(int plan) const { return plans_.at(plan).description; }
  void select(int plan) { selected_ = plan; }
  int selected() const { return selected_; }
  // Runs the selected plan on X, W (KRSC) and Y; the variant pack of each pointer triple is built once.
  Status run(const void* x, const void* w, void* y);

 private:
  struct Plan {
    Descriptor configuration, plan;
    int64_t workspace_bytes = 0;
    std::string description;
  };
  bool ok(Status status, const std::string& what);
  Descriptor tensor(int64_t id, int type, const int64_t (&dims)[4], const int64_t (&strides)[4]);
  void add_plans(int mode, int max_plans, double setup_seconds, double started);
  std::string describe_configuration(BackendDescriptor configuration, bool* usable, bool* compiled);

  const Api& api_;
  GraphConvShape shape_;
  Descriptor x_, w_, y_, convolution_, operation_, graph_;
  std::vector<Plan> plans_;
  std::vector<std::string> seen_descriptions_;
  int seen_ = 0;
  int compiled_plans_ = 0;
  int selected_ = 0;
  DeviceBuffer workspace_;
  std::map<std::tuple<const void*, const void*, void*>, Descriptor> variant_packs_;
  std::string note_;
  std::string search_;
  std::string last_failure_;  // the last plan that did not finalize, and why
};

}  // namespace tessera::gpu::cudnn
