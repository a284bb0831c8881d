#include "datasheet_peak.h"

#include <gtest/gtest.h>

namespace pipescope::benches {
namespace {

TEST(DensePeak, FoundByTheNameCudaReports) {
  // H100 SXM5 datasheet: 989.4 TFLOPS dense BF16, 1,978.9 dense FP8.
  EXPECT_DOUBLE_EQ(dense_peak_flops_per_s("NVIDIA H100 80GB HBM3", "bf16").value_or(0), 989.4e12);
  EXPECT_DOUBLE_EQ(dense_peak_flops_per_s("NVIDIA H100 80GB HBM3", "fp16").value_or(0), 989.4e12);
  EXPECT_DOUBLE_EQ(dense_peak_flops_per_s("NVIDIA H100 80GB HBM3", "fp8").value_or(0), 1978.9e12);
}

TEST(DensePeak, EmptyForAnUnknownGpuOrATypeWithoutTensorCores) {
  EXPECT_FALSE(dense_peak_flops_per_s("NVIDIA GeForce RTX 4090", "bf16").has_value());
  EXPECT_FALSE(dense_peak_flops_per_s("NVIDIA A100-SXM4-80GB", "fp8").has_value());
  EXPECT_TRUE(dense_peak_flops_per_s("NVIDIA A100-SXM4-80GB", "bf16").has_value());
  // An H100 PCIe is not the bundled SXM5 part: no peak rather than the wrong one.
  EXPECT_FALSE(dense_peak_flops_per_s("NVIDIA H100 PCIe", "bf16").has_value());
}

TEST(DensePeak, OtherSpellingsOfABundledPart) {
  EXPECT_DOUBLE_EQ(dense_peak_flops_per_s("A100-SXM-80GB", "bf16").value_or(0), 312e12);
  EXPECT_DOUBLE_EQ(dense_peak_flops_per_s("NVIDIA H200", "fp8").value_or(0), 1978.9e12);
}

}  // namespace
}  // namespace pipescope::benches
