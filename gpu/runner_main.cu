// tessera_gpu_ref: runs workload ops on the local NVIDIA GPU with the same seeded inputs as the simulator and
// the CPU reference, and writes one JSON record per op plus run.json (the GPU, its clocks as read, the
// measured ceilings, how the record was made).
//
//   tessera_gpu_ref --out DIR --op kind=gemm,name=ffn1,index=0,m=512,n=3072,k=768,dtype=bf16,seed=7 [--op
//   ...] [--skip-ceilings]
//   tessera_gpu_ref --profile DIR --op ... --pin OP/PATH=CHOICE [--pin ...]
//
// --skip-ceilings leaves out the copy and matrix ceilings (and so the roofline floors).
// --profile builds only the pinned paths (each with the library candidate its record chose) and runs each
// once between cudaProfilerStart and cudaProfilerStop, for Nsight Compute with --profile-from-start off; DIR
// gets profile_manifest.json, the profiled launches in order with the kernels each ran
// (scripts/gpu_profile.py drives it and merges the counters into the records).
// `tessera ref` and scripts/gpu-reference.sh build the --op arguments from a workload YAML.
#include <cuda_profiler_api.h>
#include <sys/stat.h>

#include "gpu/measure.hpp"
#include "gpu/session.hpp"

namespace tessera::gpu {
namespace {

int usage() {
  std::fprintf(
      stderr,
      "usage: tessera_gpu_ref --out DIR --op kind=gemm,name=N,index=I,m=M,n=N,k=K,dtype=T,seed=S ... "
      "[--skip-ceilings]\n"
      "       tessera_gpu_ref --profile DIR --op ... --pin OP/PATH=CHOICE ...\n");
  return 2;
}

// Each pinned path of each op once, between cudaProfilerStart and cudaProfilerStop.
void profile(Session& session, const std::vector<std::string>& ops, const std::string& out_dir) {
  Json manifest = Json::array();
  for (const std::string& op : ops) {
    OpMeasurement& measurement = session.measure(op);
    for (auto& [name, live] : measurement.live) {
      const std::vector<std::string> kernels = kernels_of(live->launch);
      live->launch(0);
      TESSERA_CUDA(cudaStreamSynchronize(work_stream()));
      TESSERA_CUDA(cudaProfilerStart());
      live->launch(0);
      TESSERA_CUDA(cudaStreamSynchronize(work_stream()));
      TESSERA_CUDA(cudaProfilerStop());
      Json names = Json::array();
      for (const std::string& kernel : kernels) names.push(kernel);
      manifest.push(
          Json::object().set("op", parse_op(op).get("name")).set("path", name).set("kernels", names));
    }
    measurement.live.clear();
  }
  mkdir(out_dir.c_str(), 0755);
  write_file(out_dir + "/profile_manifest.json", manifest.dump());
}

int run(int argc, char** argv) {
  std::string out_dir, profile_dir;
  std::vector<std::string> ops;
  std::vector<std::pair<std::string, std::string>> pins;
  std::string command = "tessera_gpu_ref";
  bool skip_ceilings = false;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const bool valued = i + 1 < argc;
    command += " " + argument;
    if (argument == "--skip-ceilings") {
      skip_ceilings = true;
      continue;
    }
    if (!valued) return usage();
    const std::string value = argv[++i];
    command += " " + value;
    if (argument == "--out") {
      out_dir = value;
    } else if (argument == "--profile") {
      profile_dir = value;
    } else if (argument == "--op") {
      parse_op(value);  // a bad --op is an error before anything runs
      ops.push_back(value);
    } else if (argument == "--pin") {
      const size_t equals = value.find('=');
      if (equals == std::string::npos) return usage();
      pins.emplace_back(value.substr(0, equals), value.substr(equals + 1));
    } else {
      return usage();
    }
  }
  if ((out_dir.empty() == profile_dir.empty()) || ops.empty()) {
    std::fprintf(stderr, "tessera_gpu_ref: give --out DIR or --profile DIR, and at least one --op\n");
    return 2;
  }
  Session session;
  if (!profile_dir.empty()) {
    RunContext& context = session.context();
    context.keep_live = true;
    context.effort = TimingEffort::quick();
    for (const auto& [path, choice] : pins) {
      context.only.push_back(path);
      if (!choice.empty()) context.pinned[path] = choice;
    }
    profile(session, ops, profile_dir);
    return 0;
  }
  for (const std::string& op : ops) session.measure(op);
  session.finish(out_dir, command, skip_ceilings);
  return 0;
}

}  // namespace
}  // namespace tessera::gpu

int main(int argc, char** argv) {
  try {
    return tessera::gpu::run(argc, argv);
  } catch (const tessera::gpu::Error& error) {
    std::fprintf(stderr, "tessera_gpu_ref: %s\n", error.what());
    return 3;
  }
}
