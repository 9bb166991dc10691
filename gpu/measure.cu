#include "gpu/measure.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "gpu/device.cuh"

namespace tessera::gpu {

namespace {

// Bit patterns a poisoned output starts with: NaN for the float types (0xff bytes), and for int32 a value
// no int8 product sum of a shipped size reaches (|sum| <= 2^14 * k).
constexpr int kPoisonByteFloat = 0xff, kPoisonByteInt = 0x7f;
constexpr uint32_t kPoisonInt32 = 0x7f7f7f7fu;

template <OutputType T>
__device__ inline double value_at(const void* data, int64_t i) {
  if constexpr (T == OutputType::fp32) return static_cast<const float*>(data)[i];
  if constexpr (T == OutputType::int32) return static_cast<const int32_t*>(data)[i];
  if constexpr (T == OutputType::bf16)
    return __uint_as_float(uint32_t{static_cast<const uint16_t*>(data)[i]} << 16);
  if constexpr (T == OutputType::fp16) return __half2float(static_cast<const __half*>(data)[i]);
  return 0;
}

template <OutputType T>
__device__ inline bool poisoned(const void* data, int64_t i) {
  if constexpr (T == OutputType::fp32) return static_cast<const uint32_t*>(data)[i] == 0xffffffffu;
  if constexpr (T == OutputType::int32) return static_cast<const uint32_t*>(data)[i] == kPoisonInt32;
  return static_cast<const uint16_t*>(data)[i] == 0xffffu;
}

// sums[0] += (x - anchor)^2, sums[1] += anchor^2; counts[0] unwritten (still poison), counts[1] not finite.
template <OutputType T, OutputType A>
__global__ void whole_output_stats(const void* out, const void* anchor, int64_t elements, double* sums,
                                   unsigned long long* counts) {
  double error_squares = 0, anchor_squares = 0;
  unsigned long long unwritten = 0, nonfinite = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elements;
       i += int64_t{gridDim.x} * blockDim.x) {
    if (poisoned<T>(out, i)) {
      ++unwritten;
      continue;
    }
    const double value = value_at<T>(out, i);
    if (!isfinite(value)) {
      ++nonfinite;
      continue;
    }
    if (anchor) {
      const double expected = value_at<A>(anchor, i);
      error_squares += (value - expected) * (value - expected);
      anchor_squares += expected * expected;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    error_squares += __shfl_down_sync(0xffffffffu, error_squares, offset);
    anchor_squares += __shfl_down_sync(0xffffffffu, anchor_squares, offset);
    unwritten += __shfl_down_sync(0xffffffffu, unwritten, offset);
    nonfinite += __shfl_down_sync(0xffffffffu, nonfinite, offset);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], error_squares);
    atomicAdd(&sums[1], anchor_squares);
    atomicAdd(&counts[0], unwritten);
    atomicAdd(&counts[1], nonfinite);
  }
}

// A 16-bit output widened to fp32 (an anchor of an op whose every numerics path stores 16 bits: the vector
// kinds store in the op's type, as tessera's vector unit does).
template <OutputType T>
__global__ void widen(const void* in, int64_t elements, float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elements;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<float>(value_at<T>(in, i));
}

template <OutputType T>
__global__ void gather(const void* out, const int64_t* positions, int count, double* values) {
  const int sample = blockIdx.x * blockDim.x + threadIdx.x;
  if (sample < count) values[sample] = value_at<T>(out, positions[sample]);
}

template <OutputType T>
void launch_stats(const void* out, const void* anchor, OutputType anchor_type, int64_t elements, double* sums,
                  unsigned long long* counts) {
  const int grid = grid_for(elements), block = 256;
  cudaStream_t stream = work_stream();
  if (anchor_type == OutputType::int32) {
    whole_output_stats<T, OutputType::int32><<<grid, block, 0, stream>>>(out, anchor, elements, sums, counts);
  } else {
    whole_output_stats<T, OutputType::fp32><<<grid, block, 0, stream>>>(out, anchor, elements, sums, counts);
  }
}

}  // namespace

const char* name_of(OutputType type) {
  switch (type) {
    case OutputType::fp32:
      return "fp32";
    case OutputType::int32:
      return "int32";
    case OutputType::bf16:
      return "bf16";
    case OutputType::fp16:
      return "fp16";
  }
  return "?";
}

size_t bytes_of(OutputType type) {
  return type == OutputType::bf16 || type == OutputType::fp16 ? 2 : 4;
}

double tolerance_for(OutputType output, bool reduced_precision_inputs, bool tf32) {
  if (output == OutputType::int32) return 0;
  if (output == OutputType::bf16 || output == OutputType::fp16 || reduced_precision_inputs) return 1e-2;
  return tf32 ? 5e-3 : 1e-5;
}

std::string output_class(const std::string& path_name) {
  const std::string base = path_name.substr(0, path_name.find(" ("));
  const size_t dash = base.find('-');
  return dash == std::string::npos ? base : base.substr(dash + 1);
}

Json OutputCheck::json() const {
  Json json = Json::object();
  json.set("pass", pass)
      .set("tolerance_rel_l2", tolerance)
      .set("samples", samples)
      .set("sampled_rel_l2_err", sampled_rel_l2)
      .set("sampled_max_abs_err", sampled_max_abs)
      .set("unwritten", unwritten)
      .set("nonfinite", nonfinite);
  if (anchor_rel_l2) json.set("whole_rel_l2_vs", anchor).set("whole_rel_l2_err", *anchor_rel_l2);
  return json;
}

OpChecker::OpChecker(const OpSpec& spec) : elements_(spec.out_elements) {
  positions_ = spec.positions ? spec.positions() : sample_positions(spec.out_elements, spec.seed);
  const int count = static_cast<int>(positions_.size());
  device_positions_ = DeviceBuffer(positions_.size() * sizeof(int64_t));
  TESSERA_CUDA(cudaMemcpy(device_positions_.get(), positions_.data(), device_positions_.bytes(),
                          cudaMemcpyHostToDevice));
  DeviceBuffer exact(count * sizeof(double));
  spec.reference(static_cast<const int64_t*>(device_positions_.get()), count,
                 static_cast<double*>(exact.get()));
  check_launch("the float64 reference at the sampled positions");
  reference_.resize(count);
  TESSERA_CUDA(cudaMemcpy(reference_.data(), exact.get(), exact.bytes(), cudaMemcpyDeviceToHost));
}

void OpChecker::set_anchor(const void* output, OutputType type, const std::string& name) {
  anchor_ = DeviceBuffer(static_cast<size_t>(elements_) * 4);
  if (type == OutputType::bf16 || type == OutputType::fp16) {
    auto* widened = static_cast<float*>(anchor_.get());
    if (type == OutputType::bf16) {
      widen<OutputType::bf16><<<grid_for(elements_), 256>>>(output, elements_, widened);
    } else {
      widen<OutputType::fp16><<<grid_for(elements_), 256>>>(output, elements_, widened);
    }
    check_launch("widen an anchor output");
    type = OutputType::fp32;
  } else {
    TESSERA_CUDA(cudaMemcpy(anchor_.get(), output, anchor_.bytes(), cudaMemcpyDeviceToDevice));
  }
  anchor_type_ = type;
  anchor_name_ = name;
}

OutputCheck OpChecker::check_run(const LivePath& path, double tolerance) {
  cudaStream_t stream = work_stream();
  const int poison = path.output_type == OutputType::int32 ? kPoisonByteInt : kPoisonByteFloat;
  TESSERA_CUDA(cudaMemsetAsync(path.output, poison,
                               static_cast<size_t>(elements_) * bytes_of(path.output_type), stream));
  path.launch(0);
  TESSERA_CUDA(cudaStreamSynchronize(stream));
  check_launch(path.name.c_str());
  return check(path.output, path.output_type, tolerance);
}

OutputCheck OpChecker::check(const void* output, OutputType type, double tolerance) {
  OutputCheck result;
  result.tolerance = tolerance;
  cudaStream_t stream = work_stream();
  DeviceBuffer sums(2 * sizeof(double)), counts(2 * sizeof(unsigned long long));
  TESSERA_CUDA(cudaMemsetAsync(sums.get(), 0, sums.bytes(), stream));
  TESSERA_CUDA(cudaMemsetAsync(counts.get(), 0, counts.bytes(), stream));
  const void* anchor = has_anchor() ? anchor_.get() : nullptr;
  auto* sum_data = static_cast<double*>(sums.get());
  auto* count_data = static_cast<unsigned long long*>(counts.get());
  const int count = static_cast<int>(positions_.size());
  DeviceBuffer values(count * sizeof(double));
  const auto* indices = static_cast<const int64_t*>(device_positions_.get());
  auto* value_data = static_cast<double*>(values.get());
  const int blocks = (count + 255) / 256;
  switch (type) {
    case OutputType::fp32:
      launch_stats<OutputType::fp32>(output, anchor, anchor_type_, elements_, sum_data, count_data);
      gather<OutputType::fp32><<<blocks, 256, 0, stream>>>(output, indices, count, value_data);
      break;
    case OutputType::int32:
      launch_stats<OutputType::int32>(output, anchor, anchor_type_, elements_, sum_data, count_data);
      gather<OutputType::int32><<<blocks, 256, 0, stream>>>(output, indices, count, value_data);
      break;
    case OutputType::bf16:
      launch_stats<OutputType::bf16>(output, anchor, anchor_type_, elements_, sum_data, count_data);
      gather<OutputType::bf16><<<blocks, 256, 0, stream>>>(output, indices, count, value_data);
      break;
    case OutputType::fp16:
      launch_stats<OutputType::fp16>(output, anchor, anchor_type_, elements_, sum_data, count_data);
      gather<OutputType::fp16><<<blocks, 256, 0, stream>>>(output, indices, count, value_data);
      break;
  }
  TESSERA_CUDA(cudaStreamSynchronize(stream));
  check_launch("check an output");
  double host_sums[2];
  unsigned long long host_counts[2];
  TESSERA_CUDA(cudaMemcpy(host_sums, sums.get(), sizeof host_sums, cudaMemcpyDeviceToHost));
  TESSERA_CUDA(cudaMemcpy(host_counts, counts.get(), sizeof host_counts, cudaMemcpyDeviceToHost));
  result.values.resize(count);
  TESSERA_CUDA(cudaMemcpy(result.values.data(), values.get(), values.bytes(), cudaMemcpyDeviceToHost));

  result.samples = count;
  result.unwritten = static_cast<int64_t>(host_counts[0]);
  result.nonfinite = static_cast<int64_t>(host_counts[1]);
  double error_squares = 0, reference_squares = 0;
  bool samples_finite = true;
  for (int i = 0; i < count; ++i) {
    samples_finite = samples_finite && std::isfinite(result.values[i]);
    const double difference = std::abs(result.values[i] - reference_[i]);
    result.sampled_max_abs = std::max(result.sampled_max_abs, difference);
    error_squares += difference * difference;
    reference_squares += reference_[i] * reference_[i];
  }
  result.sampled_rel_l2 =
      reference_squares > 0 ? std::sqrt(error_squares / reference_squares) : std::sqrt(error_squares);
  const bool exact = type == OutputType::int32;
  bool pass = samples_finite && result.unwritten == 0 && result.nonfinite == 0 &&
              (exact ? result.sampled_max_abs == 0 : result.sampled_rel_l2 <= tolerance);
  if (anchor) {
    result.anchor = anchor_name_;
    result.anchor_rel_l2 =
        host_sums[1] > 0 ? std::sqrt(host_sums[0] / host_sums[1]) : std::sqrt(host_sums[0]);
    pass = pass && (exact ? host_sums[0] == 0 : *result.anchor_rel_l2 <= tolerance);
  }
  result.pass = pass;
  return result;
}

int fastest_candidate(int count, const std::function<bool(int)>& select, const Launch& launch, int copies,
                      std::vector<double>* times_us) {
  const TimingEffort quick = TimingEffort::quick();
  int best = -1;
  times_us->assign(count, -1.0);
  for (int i = 0; i < count; ++i) {
    try {
      if (!select(i)) continue;
      const EagerTiming estimate = time_eager(launch, quick);
      (*times_us)[i] = time_device(launch, copies, estimate.median_us, quick).median_us;
    } catch (const Error&) {
      cudaGetLastError();
      continue;
    }
    if (best < 0 || (*times_us)[i] < (*times_us)[best]) best = i;
  }
  if (best >= 0 && !select(best)) best = -1;
  return best;
}

bool choose_named(const std::vector<std::string>& names, const std::function<void(int)>& select,
                  const std::string* pinned, const std::string& what, LivePath& live) {
  int best = -1;
  if (pinned) {
    for (int i = 0; i < static_cast<int>(names.size()); ++i)
      if (names[i] == *pinned) best = i;
    live.chosen = *pinned + ", as pinned";
  } else {
    std::vector<double> times;
    best = fastest_candidate(
        static_cast<int>(names.size()),
        [&](int i) {
          select(i);
          return true;
        },
        live.launch, live.copies, &times);
    live.algorithms_tried = static_cast<int>(names.size());
    if (best >= 0)
      live.chosen = names[best] + ", fastest by device time of " + std::to_string(names.size()) + " " + what +
                    " (us, in order: " + times_text(times) + ")";
  }
  if (best < 0) return false;
  select(best);
  live.choice = names[best];
  return true;
}

std::string times_text(const std::vector<double>& times_us) {
  std::string text;
  for (size_t i = 0; i < times_us.size(); ++i) {
    char number[32];
    std::snprintf(number, sizeof number, "%.1f", times_us[i]);
    text += (i ? ", " : "") + (times_us[i] < 0 ? std::string("-") : std::string(number));
  }
  return text;
}

OpMeasurement measure_op(const OpSpec& spec, const RunContext& context) {
  auto checker = std::make_shared<OpChecker>(spec);
  // Numerics paths first: the first of them that passes is the anchor every later path is compared with,
  // whole.
  std::vector<const PathSpec*> order;
  for (const PathSpec& path : spec.paths)
    if (path.numerics) order.push_back(&path);
  for (const PathSpec& path : spec.paths)
    if (!path.numerics) order.push_back(&path);

  struct Measured {
    std::shared_ptr<LivePath> live;
    DeviceTiming device;
    EagerTiming eager;
    OutputCheck check;
  };
  struct Best {
    std::string name;
    double device_us = 0;
    std::shared_ptr<LivePath> live;
  };
  std::map<std::string, Best> fastest_of_class;  // checked paths only, by output class
  std::optional<Measured> reported;
  Json paths = Json::array();
  for (const PathSpec* path : order) {
    Json json = Json::object();
    json.set("path", path->name).set("numerics", path->numerics).set("output_dtype", name_of(path->output));
    if (!path->fusion.empty()) json.set("fusion", path->fusion);
    if (!path->skip.empty() || !context.builds(spec.name, path->name)) {
      paths.push(json.set("ran", false).set("note", path->skip.empty() ? "not asked for" : path->skip));
      continue;
    }
    std::optional<LivePath> built;
    std::string note;
    try {
      built = path->build(context, &note);
    } catch (const Error& error) {
      note = error.what();
      cudaGetLastError();
    }
    if (!built) {
      paths.push(
          json.set("ran", false)
              .set("note", note.empty() ? "the library has no algorithm for this shape and type" : note));
      continue;
    }
    Measured measured;
    measured.live = std::make_shared<LivePath>(std::move(*built));
    LivePath& live = *measured.live;
    live.name = path->name;
    live.output_type = path->output;
    std::vector<std::string> kernels;
    try {
      measured.eager = time_eager(live.launch, context.effort);
      measured.device = time_device(live.launch, live.copies, measured.eager.median_us, context.effort);
      live.launches_per_graph = measured.device.launches_per_graph;
      kernels = kernels_of(live.launch);
      measured.check = checker->check_run(live, path->tolerance);
    } catch (const Error& error) {
      cudaGetLastError();
      paths.push(json.set("ran", false).set("note", std::string("failed while measured: ") + error.what()));
      continue;
    }
    const double device_us = measured.device.median_us;
    json.set("ran", true);
    if (live.algorithms_tried > 0) json.set("algorithms_tried", static_cast<int64_t>(live.algorithms_tried));
    if (!live.chosen.empty()) json.set("chosen", live.chosen);
    if (!live.choice.empty()) json.set("choice", live.choice);
    Json kernel_names = Json::array();
    for (const std::string& name : kernels) kernel_names.push(name);
    json.set("time_us", device_us)
        .set("device",
             Json::object()
                 .set("median_us", device_us)
                 .set("min_us", measured.device.min_us)
                 .set("max_us", measured.device.max_us)
                 .set("replays", static_cast<int64_t>(measured.device.replays))
                 .set("launches_per_graph", static_cast<int64_t>(measured.device.launches_per_graph)))
        .set("eager", Json::object()
                          .set("median_us", measured.eager.median_us)
                          .set("min_us", measured.eager.min_us)
                          .set("batches", static_cast<int64_t>(measured.eager.batches))
                          .set("launches_per_batch", static_cast<int64_t>(measured.eager.launches_per_batch)))
        .set("tflops", spec.work / (device_us * 1e6))
        .set("gbps", path->bytes / (device_us * 1e3))
        .set("kernels", kernel_names)
        .set("check", measured.check.json());
    paths.push(json);
    if (!measured.check.pass) continue;  // recorded, never reported nor compared
    if (path->numerics && !checker->has_anchor())
      checker->set_anchor(live.output, live.output_type, live.name);
    if (path->numerics && (!reported || device_us < reported->device.median_us)) reported = measured;
    // Each output class's fastest checked path: compared with the framework's path of its class, profiled,
    // and kept alive for the A/B rounds when asked.
    Best& best = fastest_of_class[output_class(live.name)];
    if (best.name.empty() || device_us < best.device_us)
      best = Best{live.name, device_us, context.keep_live ? measured.live : nullptr};
  }
  if (!reported) fail(spec.kind + " " + spec.name + ": no path computed the output and passed its check");

  OpMeasurement measurement;
  Json profiled = Json::array();
  for (const auto& [kind, best] : fastest_of_class) {
    profiled.push(best.name);
    if (best.live) measurement.live[best.name] = best.live;
  }
  const double time_us = reported->device.median_us;
  Json positions = Json::array(), values = Json::array();
  const bool integer = reported->live->output_type == OutputType::int32;
  for (size_t i = 0; i < checker->positions().size(); ++i) {
    positions.push(checker->positions()[i]);
    if (integer) {
      values.push(static_cast<int64_t>(reported->check.values[i]));
    } else {
      values.push(reported->check.values[i]);
    }
  }
  Json self_check = reported->check.json();
  self_check.set("reference", "float64 sums of the generator's values, on the GPU")
      .set("max_abs_err", reported->check.sampled_max_abs)
      .set("rel_l2_err", reported->check.sampled_rel_l2);
  Json& record = measurement.record;
  record.set("op", spec.op)
      .set("paths", paths)
      .set("reported_path", reported->live->name)
      .set("time_us", time_us)
      .set("eager_us", reported->eager.median_us)
      .set("tflops", spec.work / (time_us * 1e6));
  if (!spec.work_note.empty()) record.set("tflops_counts", spec.work_note);
  record.set("gbps", spec.bytes / (time_us * 1e3))
      .set("output",
           Json::object()
               .set("dtype", integer ? "int32" : "fp32")
               .set("elements", spec.out_elements)
               .set("complete", static_cast<int64_t>(checker->positions().size()) == spec.out_elements)
               .set("indices", positions)
               .set("values", values))
      .set("self_check", self_check)
      .set("profiled_paths", profiled)
      .set("timing",
           "time_us: device time per launch, the median of CUDA-graph replays of many launches over input "
           "copies spanning 3x the L2, each launch writing the one output; eager: launches issued back to "
           "back, median per launch");
  for (const auto& [key, text] : spec.notes) record.set(key, text);
  measurement.roofline = RooflineInput{spec.work, spec.bytes, spec.rate_kind, spec.work / (time_us * 1e6)};
  measurement.checker = context.keep_live ? checker : nullptr;
  return measurement;
}

}  // namespace tessera::gpu
