// The recorded GPU references (traces/reference/<gpu>/<workload>/, made on an NVIDIA H200 by
// scripts/gpu-reference.sh): CI has no GPU, so these records are what is checked — every shipped workload
// has one for every op (pools included), each says how it was made, the GPU's outputs agree with the CPU
// reference within the per-dtype tolerance at every recorded position, and every layer of the networks is
// timed next to the framework's own operator.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <variant>

#include "common/config.hpp"
#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"
#include "ops/numerics.hpp"
#include "ops/reference.hpp"
#include "ops/workload.hpp"
#include "traces/gpu_record.hpp"

namespace tessera {

namespace {
const std::string kRoot = std::string(TESSERA_SOURCE_DIR) + "/traces/reference";

// The CPU reference at the recorded positions: element by element for a contraction, from the whole output
// for a pool (reference_at covers the kinds with a sampled reference, contractions; the networks' pools are a
// few million elements at most).
std::vector<double> reference_at_recorded(const ops::Op& op, uint64_t seed,
                                          const std::vector<int64_t>& indices) {
  if (op.kind->has_sampled_reference()) return ops::reference_at(op, seed, indices);
  const std::vector<double> whole = ops::reference_output(op, ops::generate_inputs(op, seed), 1);
  std::vector<double> picked;
  for (const int64_t index : indices) picked.push_back(whole.at(static_cast<size_t>(index)));
  return picked;
}

std::vector<std::filesystem::path> shipped_workloads() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + "/configs/workloads"))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}
}  // namespace

TEST(GpuReference, EveryShippedWorkloadHasARecordedRunOfEveryOpThatSaysHowItWasMade) {
  for (const auto& file : shipped_workloads()) {
    const ops::Workload workload = ops::workload_from_yaml(config::load_file(file.string()));
    for (const ops::Op& op : workload.ops) {
      const auto records = traces::find_gpu_records(kRoot, workload.name, op.name);
      ASSERT_FALSE(records.empty()) << workload.name << "/" << op.name << ": no record under " << kRoot;
      for (const traces::GpuRecord& record : records) {
        // Every op kind of the shipped workloads has a GPU path (gemm, fc, conv2d, pool).
        ASSERT_TRUE(record.no_gpu_path.empty()) << record.file << ": " << record.no_gpu_path;
        EXPECT_FALSE(record.gpu.empty()) << record.file;
        EXPECT_FALSE(record.driver.empty()) << record.file;
        EXPECT_FALSE(record.cuda_runtime.empty()) << record.file;
        EXPECT_EQ(record.date.size(), 20u) << record.file;  // 2026-12-02T16:16:11Z
        EXPECT_NE(record.command.find(fmt::format("--op kind={},name={},", op.kind_name(), op.name)),
                  std::string::npos)
            << record.file;
        EXPECT_EQ(record.kind, op.kind_name()) << record.file;
        EXPECT_GT(record.time_us, 0) << record.file;
        EXPECT_GT(record.roofline_floor_us, 0) << record.file;
        EXPECT_LE(record.roofline_floor_us, record.time_us * 1.02)
            << record.file << ": faster than its roofline?";
        EXPECT_TRUE(record.self_check_pass) << record.file;
      }
    }
  }
}

TEST(GpuReference, RecordedGpuOutputsMatchTheCpuReferenceWithinTheDtypeTolerance) {
  for (const auto& file : shipped_workloads()) {
    const ops::Workload workload = ops::workload_from_yaml(config::load_file(file.string()));
    for (const ops::Op& op : workload.ops) {
      for (const traces::GpuRecord& record : traces::find_gpu_records(kRoot, workload.name, op.name)) {
        if (!record.no_gpu_path.empty()) continue;  // the test above fails it
        ASSERT_EQ(record.indices.size(), record.values.size()) << record.file;
        ASSERT_FALSE(record.indices.empty()) << record.file;
        const std::vector<double> reference = reference_at_recorded(op, workload.seed, record.indices);
        // The GPU's values as a tensor of its output type (they were fp32 or int32: exact in double).
        const DType output = accumulator_of(op.dtype);
        ops::HostTensor gpu(output, 1, static_cast<int64_t>(record.values.size()));
        for (size_t i = 0; i < record.values.size(); ++i) {
          if (output == DType::int32) {
            const auto value = static_cast<int32_t>(record.values[i]);
            std::memcpy(gpu.bytes.data() + 4 * i, &value, 4);
          } else {
            const auto value = static_cast<float>(record.values[i]);
            std::memcpy(gpu.bytes.data() + 4 * i, &value, 4);
          }
        }
        const ops::NumericsResult numerics = ops::compare_output(gpu, reference, op.dtype, "cpu");
        EXPECT_TRUE(numerics.pass) << record.file << ": rel_l2_err " << numerics.rel_l2_err
                                   << ", max_abs_err " << numerics.max_abs_err;
      }
    }
  }
}

TEST(GpuReference, EveryNetworkLayerIsTimedNextToTheFrameworkAndTheRecordSaysWhichIsFaster) {
  for (const std::string network : {"alexnet", "vgg16", "resnet50", "mobilenet-v2"}) {
    const ops::Workload workload = ops::workload_from_yaml(
        config::load_file(std::string(TESSERA_SOURCE_DIR) + "/configs/workloads/" + network + ".yaml"));
    for (const ops::Op& op : workload.ops) {
      for (const traces::GpuRecord& record : traces::find_gpu_records(kRoot, workload.name, op.name)) {
        ASSERT_TRUE(record.framework_us.has_value()) << record.file << ": no like-for-like PyTorch time";
        EXPECT_GT(*record.framework_us, 0) << record.file;
        EXPECT_NE(record.framework_path.find(std::string("torch.")), std::string::npos) << record.file;
      }
    }
  }
}

}  // namespace tessera

namespace tessera {

TEST(GpuReference, TheRunReportShowsTheGpuNextToTheSimulationAndComparesTheirOutputs) {
  const CommandResult result = run_tessera({"run", "--arch", shipped("arch/mesh4x4.yaml"), "--workload",
                                            shipped("workloads/bert-ffn.yaml"), "--dataflow", "ws",
                                            "--simulate-top", "1", "--format", "json", "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto report = nlohmann::json::parse(result.output);
  for (const auto& op : report["ops"]) {
    ASSERT_EQ(op["gpu_reference"].size(), 1u) << op["name"];
    const auto& gpu = op["gpu_reference"][0];
    EXPECT_EQ(gpu["gpu"], "NVIDIA H200");
    EXPECT_TRUE(gpu["compared"].get<bool>());
    EXPECT_GT(gpu["time_us"].get<double>(), 0);
    const auto& numerics = op["runs"][0]["numerics"];
    ASSERT_EQ(numerics.size(), 2u) << "cpu and gpu-recorded";
    EXPECT_EQ(numerics[1]["reference"], "gpu-recorded NVIDIA H200 (sampled)");
    EXPECT_TRUE(numerics[1]["pass"].get<bool>());
  }
}

TEST(GpuReference, ARecordOfAnotherShapeIsNamedAndNotCompared) {
  const CommandResult result = run_tessera({"run", "--arch", shipped("arch/mesh4x4.yaml"), "--workload",
                                            shipped("workloads/bert-ffn.yaml"), "--set", "ops.ffn1.k=512",
                                            "--timing-only", "--format", "json", "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto report = nlohmann::json::parse(result.output);
  const auto& gpu = report["ops"][0]["gpu_reference"][0];
  EXPECT_FALSE(gpu["compared"].get<bool>());
  EXPECT_EQ(gpu["note"],
            "the record was made for gemm m=512 n=3072 k=768 bf16 (op #0, seed 7); this op is gemm m=512 "
            "n=3072 k=512 bf16 (op #0, seed 7)");
}

TEST(GpuReference, AMissingRecordIsSaidSo) {
  const CommandResult result =
      run_tessera({"run", "--workload", shipped("workloads/default.yaml"), "--reference", "/nonexistent",
                   "--timing-only", "--format", "json", "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto report = nlohmann::json::parse(result.output);
  EXPECT_EQ(report["ops"][0]["gpu_reference_note"],
            "no recorded reference (/nonexistent/<gpu>/default/up_proj.json)");
}

}  // namespace tessera

namespace tessera {

// A pool is not simulated (no vector unit), but its recorded GPU time is shown; a record of the other pooling
// mode is no measurement of it.
TEST(GpuReference, APoolShowsItsGpuTimeAndARecordOfTheOtherModeIsNotCompared) {
  ScratchDir scratch;
  // AlexNet's pool1 record, filed as op #0 of a one-op workload.
  nlohmann::json record;
  std::ifstream(kRoot + "/nvidia-h200/alexnet/pool1.json") >> record;
  record["op"]["index"] = 0;
  std::filesystem::create_directories(scratch.file("ref/nvidia-h200/poolonly"));
  write_text(scratch.file("ref/nvidia-h200/poolonly/pool1.json"), record.dump());
  const std::string workload = R"(name: poolonly
seed: 12
ops:
  - {name: pool1, kind: pool, n: 4, c: 96, h: 55, w: 55, r: 3, s: 3, stride: 2, mode: max, dtype: bf16}
)";
  auto run = [&](const std::string& text) {
    write_text(scratch.file("poolonly.yaml"), text);
    const CommandResult result =
        run_tessera({"run", "--workload", scratch.file("poolonly.yaml"), "--reference", scratch.file("ref"),
                     "--format", "json", "--quiet"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return nlohmann::json::parse(result.output)["ops"][0];
  };
  const auto max_pool = run(workload);
  EXPECT_TRUE(max_pool.contains("not_simulated"));
  ASSERT_EQ(max_pool["gpu_reference"].size(), 1u);
  EXPECT_TRUE(max_pool["gpu_reference"][0]["compared"].get<bool>());
  EXPECT_GT(max_pool["gpu_reference"][0]["time_us"].get<double>(), 0);

  std::string avg = workload;
  avg.replace(avg.find("mode: max"), 9, "mode: avg");
  const auto avg_pool = run(avg);
  ASSERT_EQ(avg_pool["gpu_reference"].size(), 1u);
  EXPECT_FALSE(avg_pool["gpu_reference"][0]["compared"].get<bool>());
  EXPECT_EQ(avg_pool["gpu_reference"][0]["note"],
            "the record was made for pool max n=4 c=96 h=55 w=55 r=3 s=3 stride=2 pad=0 bf16 (op #0, seed "
            "12); this "
            "op is pool avg n=4 c=96 h=55 w=55 r=3 s=3 stride=2 pad=0 bf16 (op #0, seed 12)");
}

}  // namespace tessera
