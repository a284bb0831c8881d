// The bundled GPUs carry the datasheet numbers, and a GPU file with a defect is refused with a
// message that names the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipescope/planner/gpu.h"

namespace pipescope::planner {
namespace {

constexpr int64_t kMiB = int64_t{1024} * 1024;

TEST(BundledGpus, AreTheNamesDesignMdPromises) {
  EXPECT_EQ(known_gpu_names(),
            (std::vector<std::string>{"a100-80gb", "b200-180gb", "h100-80gb", "h200-141gb"}));
}

TEST(BundledGpus, EachLoadsUnderItsOwnNameWithASource) {
  for (const std::string& name : known_gpu_names()) {
    auto gpu = find_gpu(name);
    ASSERT_TRUE(gpu.ok()) << gpu.error().message;
    EXPECT_EQ(gpu->name, name);
    EXPECT_FALSE(gpu->source.empty()) << name;
    EXPECT_FALSE(gpu->device_name.empty()) << name;
  }
}

TEST(BundledGpus, A100MatchesTheDatasheet) {
  auto gpu = find_gpu("a100-80gb");
  ASSERT_TRUE(gpu.ok()) << gpu.error().message;
  EXPECT_EQ(gpu->memory_bytes, 81920 * kMiB);  // nvidia-smi memory.total, 80 GiB
  EXPECT_DOUBLE_EQ(gpu->peak_dense_bf16_flops_per_s, 312e12);
  EXPECT_DOUBLE_EQ(gpu->peak_dense_fp8_flops_per_s, 0);  // Ampere has no FP8 tensor cores
  EXPECT_DOUBLE_EQ(gpu->hbm_bytes_per_s, 2039e9);
  EXPECT_DOUBLE_EQ(gpu->nvlink_bytes_per_s, 600e9 / 2);  // "600 GB/s" counts both directions
}

TEST(BundledGpus, H100AndH200ShareComputeButNotMemory) {
  auto h100 = find_gpu("h100-80gb");
  auto h200 = find_gpu("h200-141gb");
  ASSERT_TRUE(h100.ok() && h200.ok());
  EXPECT_EQ(h100->memory_bytes, 81559 * kMiB);
  EXPECT_EQ(h200->memory_bytes, 143771 * kMiB);
  EXPECT_DOUBLE_EQ(h100->peak_dense_bf16_flops_per_s, 989.4e12);
  EXPECT_DOUBLE_EQ(h200->peak_dense_bf16_flops_per_s, 989.4e12);
  EXPECT_DOUBLE_EQ(h100->peak_dense_fp8_flops_per_s, 1978.9e12);
  EXPECT_DOUBLE_EQ(h100->hbm_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(h200->hbm_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h100->nvlink_bytes_per_s, 900e9 / 2);
}

TEST(FindGpu, UnknownNameListsTheKnownOnes) {
  auto gpu = find_gpu("b200");
  ASSERT_FALSE(gpu.ok());
  EXPECT_NE(gpu.error().message.find("unknown GPU 'b200'"), std::string::npos) << gpu.error().message;
  for (const std::string& name : known_gpu_names()) {
    EXPECT_NE(gpu.error().message.find(name), std::string::npos) << gpu.error().message;
  }
}

std::string gpu_json(const std::string& replace_key = "", const std::string& with = "") {
  std::string text = R"({
    "schema_version": 1, "name": "test-gpu", "memory_bytes": 1000, "peak_dense_bf16_flops_per_s": 1e12,
    "peak_dense_fp8_flops_per_s": 0, "hbm_bytes_per_s": 1e9, "nvlink_bytes_per_s": 1e9, "source": "test"})";
  if (!replace_key.empty()) {
    const size_t at = text.find("\"" + replace_key + "\"");
    const size_t end = text.find_first_of(",}", at);
    text.replace(at, end - at, with);
  }
  return text;
}

std::string parse_error(const std::string& text) {
  auto gpu = parse_gpu_json(text, "GPU file 'x.json'");
  return gpu.ok() ? "(parsed)" : gpu.error().message;
}

TEST(ParseGpu, AcceptsAGpuWithoutFp8) {
  auto gpu = parse_gpu_json(gpu_json(), "GPU file 'x.json'");
  ASSERT_TRUE(gpu.ok()) << gpu.error().message;
  EXPECT_EQ(gpu->name, "test-gpu");
  EXPECT_EQ(gpu->memory_bytes, 1000);
}

TEST(ParseGpu, ZeroOrNegativeNumbersNameTheField) {
  EXPECT_EQ(parse_error(gpu_json("hbm_bytes_per_s", R"("hbm_bytes_per_s": 0)")),
            "GPU file 'x.json': field 'hbm_bytes_per_s' must be a positive number, got 0");
  EXPECT_EQ(parse_error(gpu_json("memory_bytes", R"("memory_bytes": -5)")),
            "GPU file 'x.json': field 'memory_bytes' must be a positive integer, got -5");
  EXPECT_EQ(parse_error(gpu_json("peak_dense_fp8_flops_per_s", R"("peak_dense_fp8_flops_per_s": -1)")),
            "GPU file 'x.json': field 'peak_dense_fp8_flops_per_s' must be a number >= 0, got -1");
}

TEST(ParseGpu, MissingWrongTypeAndUnknownFieldsAreNamed) {
  EXPECT_EQ(parse_error(gpu_json("nvlink_bytes_per_s", R"("nvlink": 1)")),
            "GPU file 'x.json': unknown field 'nvlink' (known here: schema_version, name, device_name, "
            "memory_bytes, peak_dense_bf16_flops_per_s, peak_dense_fp8_flops_per_s, hbm_bytes_per_s, "
            "nvlink_bytes_per_s, source)");
  EXPECT_EQ(parse_error(gpu_json("source", R"("device_name": "x")")),
            "GPU file 'x.json': field 'source' is missing");
  EXPECT_EQ(parse_error(gpu_json("peak_dense_bf16_flops_per_s", R"("peak_dense_bf16_flops_per_s": "fast")")),
            "GPU file 'x.json': field 'peak_dense_bf16_flops_per_s' must be a positive number, got \"fast\"");
}

TEST(ParseGpu, RefusesANewerSchemaVersion) {
  EXPECT_EQ(parse_error(gpu_json("schema_version", R"("schema_version": 2)")),
            "GPU file 'x.json': schema_version 2 is newer than this pipescope understands (1); upgrade "
            "pipescope, or write the file with schema_version 1");
}

TEST(ParseGpu, ReportsJsonSyntaxErrors) {
  const std::string message = parse_error(R"({"name": )");
  EXPECT_EQ(message.rfind("GPU file 'x.json': not valid JSON (syntax error at byte ", 0), 0u) << message;
}

TEST(ParseGpu, ANumberBeyondDoubleIsAnInputErrorNotACrash) {
  const std::string message = parse_error(R"({"name": "x", "memory_bytes": 1e400})");
  EXPECT_EQ(message, "GPU file 'x.json': holds a number out of range (number overflow parsing '1e400')");
}

std::string identified(std::string_view device_name) {
  auto gpu = identify_gpu(device_name);
  return gpu.ok() ? gpu->name : gpu.error().message;
}

TEST(IdentifyGpu, NamesOfTheBundledPartsAsDriversSpellThem) {
  EXPECT_EQ(identified("NVIDIA H100 80GB HBM3"), "h100-80gb");
  EXPECT_EQ(identified("NVIDIA H100 SXM5 80GB"), "h100-80gb");
  EXPECT_EQ(identified("NVIDIA H200"), "h200-141gb");
  EXPECT_EQ(identified("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(identified("NVIDIA B200"), "b200-180gb");
  EXPECT_EQ(identified("A100-SXM-80GB"), "a100-80gb");  // older drivers: no vendor
}

TEST(IdentifyGpu, OtherPartsOfTheSameChipAreRefusedWithWhatDiffers) {
  EXPECT_EQ(
      identified("NVIDIA H100 PCIe"),
      "the device 'NVIDIA H100 PCIe' is an H100 PCIe (756 TFLOP/s dense BF16, 2.0 TB/s HBM2e, 114 SMs, no "
      "NVSwitch), which no bundled GPU (a100-80gb, b200-180gb, h100-80gb, h200-141gb) describes; pass --gpu "
      "NAME to "
      "express its measurements against that GPU's datasheet (predicted times stay the measured ones; "
      "memory size and link figures are that GPU's), or add a GPU file");
  EXPECT_NE(identified("NVIDIA H100 NVL").find("is an H100 NVL (94 GB"), std::string::npos);
  EXPECT_NE(identified("NVIDIA H200 NVL").find("is an H200 NVL"), std::string::npos);
  EXPECT_NE(identified("NVIDIA GB200").find("is a GB200 (the Grace Blackwell superchip's B200"),
            std::string::npos)
      << identified("NVIDIA GB200");
  EXPECT_NE(identified("NVIDIA A100-SXM4-40GB").find("is an A100 40GB"), std::string::npos);
  EXPECT_NE(identified("NVIDIA A100 80GB PCIe").find("is an A100 80GB PCIe"), std::string::npos);
  EXPECT_NE(identified("NVIDIA H100").find("the name tells neither SXM5 nor PCIe nor NVL"),
            std::string::npos);
  EXPECT_EQ(identified("NVIDIA GeForce RTX 4090"),
            "the device 'NVIDIA GeForce RTX 4090' is none of the bundled GPUs (a100-80gb, b200-180gb, "
            "h100-80gb, h200-141gb); pass --gpu NAME for the closest, or add a GPU file");
}

}  // namespace
}  // namespace pipescope::planner
