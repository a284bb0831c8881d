#include "launch_batch.h"

#include <gtest/gtest.h>

namespace pipescope::benches {
namespace {

TEST(LaunchBatch, SmallLaunchesAreBatchedUpToAHundred) {
  EXPECT_EQ(batch_for(2e9, 2e11), 100);  // a 1 GFLOP GEMM: 100 of them
  EXPECT_EQ(batch_for(1e3, 2e11), 100);  // never more than 100
  EXPECT_EQ(batch_for(5e10, 2e11), 4);
  EXPECT_EQ(batch_for(1e12, 2e11), 1);  // one large launch alone
  EXPECT_EQ(batch_for(0, 2e11), 1);
}

// The run of 2026-11-26 (docs/gpu-validation.md): with 0.1 s asked per launch, a 512^3 GEMM in
// batches of 100 kept the GPU 10 s. The GPU time a benchmark costs is min time x batch.
TEST(LaunchBatch, TheGpuTimeOfABenchmarkDoesNotGrowWithItsBatch) {
  for (int batch : {1, 4, 37, 100}) {
    EXPECT_DOUBLE_EQ(min_time_for_batch(0.1, batch) * batch, 0.1) << batch;
  }
  EXPECT_DOUBLE_EQ(min_time_for_batch(0.1, 0), 0.1);
}

}  // namespace
}  // namespace pipescope::benches
