// How every op of every kind is measured (issue "The GPU reference measures kernels, not launches"): each
// path of the op is built, timed on the device by graph replay and eagerly, its kernels named, and its output
// checked — every element written and finite, the sampled positions against the float64 reference within the
// tolerance of the path's output type, and the whole output against the first numerics path that passed. A
// path that fails its check is recorded as such and never reported. Operator files describe their paths
// (OpSpec); this file does the rest the same way for all of them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/runner.hpp"

namespace tessera::gpu {

// What a path's output holds.
enum class OutputType { fp32, int32, bf16, fp16 };
const char* name_of(OutputType type);
size_t bytes_of(OutputType type);

// The relative L2 error a path's output may have against the float64 reference (DESIGN.md's tolerances):
// fp32 products and sums 1e-5; TF32 products 5e-3; 16-bit operands or a 16-bit output 1e-2; int32 exact (0).
double tolerance_for(OutputType output, bool reduced_precision_inputs, bool tf32);

// One way of computing an op, built: the launch, where launch(0) writes, and what owns the operands and
// library objects the launch uses.
struct LivePath {
  Launch launch;
  void* output = nullptr;                    // launch(0)'s output
  std::function<void*(int copy)> output_at;  // the output launch(i) writes, i % copies (an epilogue kernel's)
  int copies = 1;                            // input copies the launches rotate over
  std::shared_ptr<void> state;
  int algorithms_tried = 0;  // library candidates (cuBLASLt algorithms, cuDNN plans, kernel tilings) timed
  std::string chosen;        // the candidate kept, in words
  std::string choice;        // the same as RunContext::pinned takes it (empty: nothing was chosen)
  // Set by measure_op.
  std::string name;
  OutputType output_type = OutputType::fp32;
  int launches_per_graph = 0;
  std::unique_ptr<CapturedGraph> graph;  // built on first replay (A/B rounds)
};

struct PathSpec {
  std::string name;
  bool numerics = false;  // tessera's output type at tessera's precision: the reported path is one of these
  OutputType output = OutputType::fp32;
  double tolerance = 0;
  double bytes = 0;    // the fewest bytes the path must move: inputs once, its output once
  std::string fusion;  // with an epilogue: "fused" (in the library's epilogue) or "unfused" (a kernel after)
  // Builds the path, or returns nothing with *note saying why there is none (the library has no algorithm).
  std::function<std::optional<LivePath>(const RunContext&, std::string* note)> build;
  std::string skip;  // set: not built; the record says why
};

struct OpSpec {
  std::string kind, name;
  Json op = Json::object();  // the op's fields as the record shows them
  uint64_t seed = 0;
  int64_t out_elements = 0;
  double work = 0;        // flops, or a pool's window elements read
  std::string work_note;  // what `work` counts when it is not flops
  std::string rate_kind;  // the matrix ceiling of the roofline floor
  double bytes = 0;       // the fewest bytes with tessera's output type
  // The positions checked and recorded: sample_positions(out_elements, seed) unless set (a kind whose CPU
  // reference costs per row, as moe's, samples whole rows of a few tokens).
  std::function<std::vector<int64_t>()> positions;
  // The exact output at `count` sampled positions (device arrays), in float64; launched on the legacy stream.
  std::function<void(const int64_t* positions, int count, double* out)> reference;
  std::vector<PathSpec> paths;
  std::vector<std::pair<std::string, std::string>> notes;  // more fields of the record ("cudnn": library)
};

struct OutputCheck {
  bool pass = false;
  double tolerance = 0;
  double sampled_rel_l2 = 0, sampled_max_abs = 0;
  int64_t samples = 0, unwritten = 0, nonfinite = 0;
  std::optional<double> anchor_rel_l2;
  std::string anchor;          // the path compared with, whole
  std::vector<double> values;  // at the sampled positions
  Json json() const;
};

// Checks outputs of one op: the sampled positions (all of a small output) with their float64 reference,
// computed once, and the anchor's whole output.
class OpChecker {
 public:
  explicit OpChecker(const OpSpec& spec);
  // Poisons the path's output, runs launch(0) and checks what it wrote.
  OutputCheck check_run(const LivePath& path, double tolerance);
  // Checks an output already in device memory (e.g. the framework's, through the C API).
  OutputCheck check(const void* output, OutputType type, double tolerance);
  void set_anchor(const void* output, OutputType type, const std::string& name);
  bool has_anchor() const { return !anchor_name_.empty(); }
  const std::vector<int64_t>& positions() const { return positions_; }
  int64_t elements() const { return elements_; }

 private:
  int64_t elements_ = 0;
  std::vector<int64_t> positions_;
  DeviceBuffer device_positions_;
  std::vector<double> reference_;
  DeviceBuffer anchor_;
  OutputType anchor_type_ = OutputType::fp32;
  std::string anchor_name_;
};

OpMeasurement measure_op(const OpSpec& spec, const RunContext& context);

// A path's output class, from its name: what follows the library ("pad8+cudnn_graph-bf16-bf16out" ->
// "bf16-bf16out"). Paths of one class store the same output and are compared with the framework's path of it.
std::string output_class(const std::string& path_name);

// Chooses among a library's candidates by device time, as the runner reports time: select(i) makes candidate
// i the one `launch` runs (false: it cannot), each is timed briefly by graph replay, the fastest index is
// returned (-1 when none ran). times_us[i] is each candidate's time (-1: did not run).
int fastest_candidate(int count, const std::function<bool(int)>& select, const Launch& launch, int copies,
                      std::vector<double>* times_us);
// Chooses one of a kernel's named candidates (tilings, row-group shapes) for `live`: the pinned one, else the
// fastest by device time (select(i) makes candidate i the one live.launch runs); sets live.chosen, choice and
// algorithms_tried and leaves the choice selected. Returns false when none ran.
bool choose_named(const std::vector<std::string>& names, const std::function<void(int)>& select,
                  const std::string* pinned, const std::string& what, LivePath& live);

// "a, b, c" of the times (us, one decimal; "-" for a candidate that did not run).
std::string times_text(const std::vector<double>& times_us);

// Positions of the output kept in the record: all of it for a small output, else a seeded sample.
std::vector<int64_t> sample_positions(int64_t elements, uint64_t seed);

}  // namespace tessera::gpu
