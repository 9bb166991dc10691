#include "gpu/cudnn_graph.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace tessera::gpu::cudnn {

namespace {
double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr int64_t kAlignmentBytes = 16;                   // cudaMalloc's 256-byte alignment covers it
constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 30;  // a plan that wants more is left out
constexpr int64_t kMaxConfigurations = 64;                // read from one heuristics query
constexpr int kMaxKnobs = 32;
constexpr int kMaxCompiledPlans = 2;  // plans whose kernels are compiled at run time (about a second each)
constexpr int kMaxNotes = 16;
constexpr int64_t kX = 1, kW = 2, kY = 3;  // the tensors' unique ids in the graph and the variant pack
}  // namespace

Descriptor::Descriptor(const Api& api, int type) : api_(&api) {
  status_ = api.create_descriptor(type, &descriptor_);
  if (status_ != 0) descriptor_ = nullptr;
}
Descriptor::~Descriptor() {
  if (descriptor_) api_->destroy_descriptor(descriptor_);
}
Descriptor::Descriptor(Descriptor&& other) noexcept
    : api_(other.api_), descriptor_(other.descriptor_), status_(other.status_) {
  other.descriptor_ = nullptr;
}
Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  std::swap(api_, other.api_);
  std::swap(descriptor_, other.descriptor_);
  std::swap(status_, other.status_);
  return *this;
}

bool GraphConv::ok(Status status, const std::string& what) {
  if (status == 0) return true;
  if (note_.empty()) note_ = describe(status, what);
  return false;
}

Descriptor GraphConv::tensor(int64_t id, int type, const int64_t (&dims)[4], const int64_t (&strides)[4]) {
  using namespace graph;
  Descriptor made(api_, kTensor);
  const bool good =
      ok(made.status(), "create a tensor descriptor") &&
      ok(api_.set_attribute(made.get(), kTensorDataType, kTypeDataType, 1, &type), "tensor data type") &&
      ok(api_.set_attribute(made.get(), kTensorDimensions, kTypeInt64, 4, dims), "tensor dimensions") &&
      ok(api_.set_attribute(made.get(), kTensorStrides, kTypeInt64, 4, strides), "tensor strides") &&
      ok(api_.set_attribute(made.get(), kTensorUniqueId, kTypeInt64, 1, &id), "tensor id") &&
      ok(api_.set_attribute(made.get(), kTensorByteAlignment, kTypeInt64, 1, &kAlignmentBytes),
         "tensor alignment") &&
      ok(api_.finalize(made.get()), "finalize a tensor");
  return good ? std::move(made) : Descriptor();
}

GraphConv::GraphConv(const Api& api, const GraphConvShape& shape, int heuristic_plans, int fallback_plans,
                     double setup_seconds, bool wide)
    : api_(api), shape_(shape) {
  using namespace graph;
  if (!api.graph) {
    note_ = api.graph_missing;
    return;
  }
  const double started = seconds_now();
  const GraphConvShape& v = shape;
  const int64_t group_c = v.c / v.groups;
  // cuDNN's dimensions are always (N, C, H, W) and (K, C/groups, R, S); NHWC and KRSC storage are strides.
  const int64_t x_dims[4] = {v.n, v.c, v.h, v.w}, x_strides[4] = {v.h * v.w * v.c, 1, v.w * v.c, v.c};
  const int64_t w_dims[4] = {v.k, group_c, v.r, v.s};
  const int64_t w_strides[4] = {v.r * v.s * group_c, 1, v.s * group_c, group_c};
  const int64_t y_dims[4] = {v.n, v.k, v.p, v.q}, y_strides[4] = {v.p * v.q * v.k, 1, v.q * v.k, v.k};
  x_ = tensor(kX, v.x_type, x_dims, x_strides);
  w_ = tensor(kW, v.x_type, w_dims, w_strides);
  y_ = tensor(kY, v.y_type, y_dims, y_strides);
  if (!x_.get() || !w_.get() || !y_.get()) return;

  const int64_t spatial_dims = 2;
  const int compute = kFloat, mode = kCrossCorrelation;
  const int64_t dilations[2] = {v.dilation, v.dilation}, strides[2] = {v.stride, v.stride};
  const int64_t paddings[2] = {v.pad, v.pad};
  convolution_ = Descriptor(api, kConvolution);
  BackendDescriptor c = convolution_.get();
  if (!ok(convolution_.status(), "create the convolution descriptor") ||
      !ok(api.set_attribute(c, kConvolutionSpatialDims, kTypeInt64, 1, &spatial_dims), "spatial dims") ||
      !ok(api.set_attribute(c, kConvolutionComputeType, kTypeDataType, 1, &compute), "compute type") ||
      !ok(api.set_attribute(c, kConvolutionMode, kTypeConvolutionMode, 1, &mode), "convolution mode") ||
      !ok(api.set_attribute(c, kConvolutionDilations, kTypeInt64, 2, dilations), "dilations") ||
      !ok(api.set_attribute(c, kConvolutionFilterStrides, kTypeInt64, 2, strides), "filter strides") ||
      !ok(api.set_attribute(c, kConvolutionPrePaddings, kTypeInt64, 2, paddings), "pre-paddings") ||
      !ok(api.set_attribute(c, kConvolutionPostPaddings, kTypeInt64, 2, paddings), "post-paddings") ||
      !ok(api.finalize(c), "finalize the convolution descriptor"))
    return;

  const float alpha = 1, beta = 0;
  operation_ = Descriptor(api, kConvolutionForward);
  BackendDescriptor o = operation_.get(), x = x_.get(), w = w_.get(), y = y_.get();
  if (!ok(operation_.status(), "create the convolution forward operation") ||
      !ok(api.set_attribute(o, kForwardX, kTypeBackendDescriptor, 1, &x), "operation X") ||
      !ok(api.set_attribute(o, kForwardW, kTypeBackendDescriptor, 1, &w), "operation W") ||
      !ok(api.set_attribute(o, kForwardY, kTypeBackendDescriptor, 1, &y), "operation Y") ||
      !ok(api.set_attribute(o, kForwardConvolution, kTypeBackendDescriptor, 1, &c),
          "operation convolution") ||
      !ok(api.set_attribute(o, kForwardAlpha, kTypeFloat, 1, &alpha), "operation alpha") ||
      !ok(api.set_attribute(o, kForwardBeta, kTypeFloat, 1, &beta), "operation beta") ||
      !ok(api.finalize(o), "finalize the convolution forward operation"))
    return;

  graph_ = Descriptor(api, kOperationGraph);
  BackendDescriptor g = graph_.get();
  Handle handle = api.handle;
  if (!ok(graph_.status(), "create the operation graph") ||
      !ok(api.set_attribute(g, kOperationGraphOps, kTypeBackendDescriptor, 1, &o), "graph operations"))
    return;
  api.set_attribute(g, kOperationGraphHandle, kTypeHandle, 1, &handle);  // deprecated in later cuDNN 9s
  if (!ok(api.finalize(g), "finalize the operation graph")) return;

  if (wide) {
    setup_seconds = std::max(setup_seconds, 6.0);
    const std::pair<int, const char*> modes[4] = {
        {kModeA, "A"}, {kModeInstant, "instant"}, {kModeB, "B"}, {kModeFallback, "fallback"}};
    for (const auto& [mode, name] : modes) {
      const int before = plans();
      add_plans(mode, before + static_cast<int>(kMaxConfigurations), setup_seconds, started);
      search_ += (search_.empty() ? "new plans per heuristics mode: " : ", ") + std::string(name) + " " +
                 std::to_string(plans() - before);
    }
  } else {
    add_plans(kModeA, heuristic_plans, setup_seconds, started);
    add_plans(kModeFallback, plans() + fallback_plans, setup_seconds, started);
  }
  int64_t workspace = 1;
  for (const Plan& plan : plans_) workspace = std::max(workspace, plan.workspace_bytes);
  workspace_ = DeviceBuffer(static_cast<size_t>(workspace));
  if (plans_.empty() && note_.empty())
    note_ = "cuDNN's heuristics proposed " + std::to_string(seen_) +
            " engine configurations and no execution plan finalized" +
            (last_failure_.empty() ? std::string() : " (last: " + last_failure_ + ")");
  if (seconds_now() - started > setup_seconds)
    note_ = "setup stopped after " + std::to_string(static_cast<int>(setup_seconds)) + " s with " +
            std::to_string(plans_.size()) + " plans";
}

std::string GraphConv::describe_configuration(BackendDescriptor configuration, bool* usable, bool* compiled) {
  using namespace graph;
  *usable = true;
  *compiled = false;
  Descriptor engine(api_, kEngine);
  int64_t count = 0;
  if (engine.status() != 0 || api_.get_attribute(configuration, kEngineConfigEngine, kTypeBackendDescriptor,
                                                 1, &count, engine.address()) != 0)
    return "engine ?";
  int64_t index = -1;
  api_.get_attribute(engine.get(), kEngineGlobalIndex, kTypeInt64, 1, &count, &index);
  std::string text = "engine " + std::to_string(index);

  // Every plan computes with fp32 accumulation, as the path's name says; fp32 operands without TF32 keep
  // fp32 products and sums all the way (no tensor cores, no down-converted inputs, no FFT or Winograd).
  const bool strict_fp32 = shape_.x_type == kFloat && !shape_.allow_tf32;
  int notes[kMaxNotes];
  int64_t note_count = 0;
  if (api_.get_attribute(engine.get(), kEngineNumericalNote, kTypeNumericalNote, kMaxNotes, &note_count,
                         notes) == 0) {
    for (int64_t i = 0; i < std::min<int64_t>(note_count, kMaxNotes); ++i) {
      const int note = notes[i];
      if (note == kNoteReducedPrecisionReduction) *usable = false;
      if (strict_fp32 && (note == kNoteTensorCore || note == kNoteDownConvertInputs || note == kNoteFft ||
                          note == kNoteWinograd))
        *usable = false;
    }
  }
  int behaviors[kMaxNotes];
  int64_t behavior_count = 0;
  if (api_.get_attribute(engine.get(), kEngineBehaviorNote, kTypeBehaviorNote, kMaxNotes, &behavior_count,
                         behaviors) == 0) {
    for (int64_t i = 0; i < std::min<int64_t>(behavior_count, kMaxNotes); ++i) {
      if (behaviors[i] == kNoteRequiresFilterReorder || behaviors[i] == kNoteRequiresBiasReorder)
        *usable = false;  // wants its operands rearranged first
      if (behaviors[i] == kNoteRuntimeCompilation) *compiled = true;
    }
  }
  if (*compiled) text += " compiled";

  std::vector<Descriptor> knobs;
  std::vector<BackendDescriptor> handles;
  for (int i = 0; i < kMaxKnobs; ++i) {
    knobs.emplace_back(api_, kKnobChoice);
    handles.push_back(knobs.back().get());
  }
  int64_t knob_count = 0;
  if (api_.get_attribute(configuration, kEngineConfigKnobChoices, kTypeBackendDescriptor, kMaxKnobs,
                         &knob_count, handles.data()) == 0 &&
      knob_count > 0) {
    text += " knobs";
    for (int64_t i = 0; i < std::min<int64_t>(knob_count, kMaxKnobs); ++i) {
      int type = -1;
      int64_t value = 0;
      api_.get_attribute(handles[i], kKnobChoiceType, kTypeKnobType, 1, &count, &type);
      api_.get_attribute(handles[i], kKnobChoiceValue, kTypeInt64, 1, &count, &value);
      text += " " + std::to_string(type) + "=" + std::to_string(value);
    }
  }
  return text;
}

void GraphConv::add_plans(int mode, int max_plans, double setup_seconds, double started) {
  using namespace graph;
  Descriptor heuristics(api_, kEngineHeuristics);
  BackendDescriptor g = graph_.get();
  if (heuristics.status() != 0 ||
      api_.set_attribute(heuristics.get(), kHeuristicsOperationGraph, kTypeBackendDescriptor, 1, &g) != 0 ||
      api_.set_attribute(heuristics.get(), kHeuristicsMode, kTypeHeuristicsMode, 1, &mode) != 0 ||
      api_.finalize(heuristics.get()) != 0)
    return;  // this mode proposes nothing for the graph
  int64_t count = 0;
  if (api_.get_attribute(heuristics.get(), kHeuristicsResults, kTypeBackendDescriptor, 0, &count, nullptr) !=
      0)
    return;
  count = std::min(count, kMaxConfigurations);
  std::vector<Descriptor> configurations;
  std::vector<BackendDescriptor> handles;
  for (int64_t i = 0; i < count; ++i) {
    configurations.emplace_back(api_, kEngineConfig);
    handles.push_back(configurations.back().get());
  }
  int64_t returned = 0;
  if (count == 0 || api_.get_attribute(heuristics.get(), kHeuristicsResults, kTypeBackendDescriptor, count,
                                       &returned, handles.data()) != 0)
    return;
  for (int64_t i = 0; i < std::min(returned, count); ++i) {
    if (static_cast<int>(plans_.size()) >= max_plans || seconds_now() - started > setup_seconds) return;
    ++seen_;
    bool usable = false, compiled = false;
    const std::string description = describe_configuration(handles[i], &usable, &compiled);
    if (!usable || (compiled && compiled_plans_ >= kMaxCompiledPlans)) continue;
    if (std::find(seen_descriptions_.begin(), seen_descriptions_.end(), description) !=
        seen_descriptions_.end())
      continue;  // the fallback list repeats what mode A proposed
    seen_descriptions_.push_back(description);
    Plan plan;
    plan.plan = Descriptor(api_, kExecutionPlan);
    if (plan.plan.status() != 0) continue;
    Handle handle = api_.handle;
    api_.set_attribute(plan.plan.get(), kPlanHandle, kTypeHandle, 1, &handle);  // deprecated in later 9s
    BackendDescriptor configuration = handles[i];
    if (api_.set_attribute(plan.plan.get(), kPlanEngineConfig, kTypeBackendDescriptor, 1, &configuration) !=
        0)
      continue;
    const Status finalized = api_.finalize(plan.plan.get());
    if (finalized != 0) {
      last_failure_ = describe(finalized, "plan of " + description);
      continue;
    }
    int64_t values = 0;
    if (api_.get_attribute(plan.plan.get(), kPlanWorkspaceSize, kTypeInt64, 1, &values,
                           &plan.workspace_bytes) != 0 ||
        plan.workspace_bytes > kMaxWorkspaceBytes)
      continue;
    compiled_plans_ += compiled ? 1 : 0;
    plan.configuration = std::move(configurations[i]);
    plan.description = description + (mode == kModeA         ? " (heuristics A)"
                                      : mode == kModeInstant ? " (heuristics instant)"
                                      : mode == kModeB       ? " (heuristics B)"
                                                             : " (fallback list)");
    plans_.push_back(std::move(plan));
  }
}

Status GraphConv::run(const void* x, const void* w, void* y) {
  using namespace graph;
  const auto key = std::make_tuple(x, w, y);
  auto found = variant_packs_.find(key);
  if (found == variant_packs_.end()) {
    Descriptor pack(api_, kVariantPack);
    if (pack.status() != 0) return pack.status();
    const int64_t ids[3] = {kX, kW, kY};
    void* pointers[3] = {const_cast<void*>(x), const_cast<void*>(w), y};
    void* workspace = workspace_.get();
    Status status = api_.set_attribute(pack.get(), kVariantPackUniqueIds, kTypeInt64, 3, ids);
    if (status == 0)
      status = api_.set_attribute(pack.get(), kVariantPackDataPointers, kTypeVoidPointer, 3, pointers);
    if (status == 0)
      status = api_.set_attribute(pack.get(), kVariantPackWorkspace, kTypeVoidPointer, 1, &workspace);
    if (status == 0) status = api_.finalize(pack.get());
    if (status != 0) return status;
    found = variant_packs_.emplace(key, std::move(pack)).first;
  }
  return api_.execute(api_.handle, plans_.at(selected_).plan.get(), found->second.get());
}

}  // namespace tessera::gpu::cudnn
