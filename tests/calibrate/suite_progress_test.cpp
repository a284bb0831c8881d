// `calibrate run`'s progress and time left, from the suite's console lines, and the GPUs its
// programs will see.
#include <gtest/gtest.h>

#include "pipescope/calibrate/suite_progress.h"
#include "pipescope/calibrate/visible_gpus.h"

namespace pipescope::calibrate {
namespace {

SuiteProgress two_phases() {
  return SuiteProgress({{"gpu_benchmark", {"gemm/a", "gemm/b", "hbm/c", "hbm/d"}, 0.5},
                        {"nccl_benchmark", {"nccl/all_reduce/ranks:8/bytes:8/manual_time", "nccl/y"}, 2.0}});
}

TEST(SuiteProgress, CountsListedNamesOnceAndEstimatesAtEachPhasesOwnPace) {
  SuiteProgress p = two_phases();
  EXPECT_EQ(p.total(), 6u);
  EXPECT_DOUBLE_EQ(p.fraction(), 0);
  EXPECT_DOUBLE_EQ(p.seconds_left(0), 4 * 0.5 + 2 * 2.0);  // priors only
  p.start(0, 10);
  EXPECT_EQ(p.line("gemm/a            12.3 us        12.4 us       8000 flops=1G", 11), "gemm/a");
  EXPECT_DOUBLE_EQ(p.fraction(), 1.0 / 6);
  // 1 s per benchmark so far in this phase: 3 left at 1 s, the next phase at its prior.
  EXPECT_DOUBLE_EQ(p.seconds_left(11), 3 * 1.0 + 2 * 2.0);
  EXPECT_EQ(p.line("gemm/a            12.9 us", 11.5), "");  // a repetition
  EXPECT_EQ(p.line("gemm/a_median     12.5 us", 11.5), "");  // an aggregate
  EXPECT_EQ(p.line("Run on (16 X 3000 MHz CPU s)", 11.5), "");
  EXPECT_EQ(p.line("gemm/b 3 us\n", 12), "gemm/b");
  EXPECT_DOUBLE_EQ(p.seconds_left(12), 2 * 1.0 + 2 * 2.0);
  p.finish(13);  // hbm/c and hbm/d were not reported (skipped): the phase is over all the same
  EXPECT_EQ(p.done(), 4u);
  EXPECT_DOUBLE_EQ(p.seconds_left(13), 2 * 2.0);
  p.start(1, 13);
  // Names from a listing without the launcher's environment (ranks:1) would never match.
  EXPECT_EQ(p.line("nccl/all_reduce/ranks:1/bytes:8/manual_time 20 us", 14), "");
  EXPECT_EQ(p.line("nccl/all_reduce/ranks:8/bytes:8/manual_time 20 us", 16),
            "nccl/all_reduce/ranks:8/bytes:8/manual_time");
  EXPECT_DOUBLE_EQ(p.fraction(), 5.0 / 6);
  EXPECT_DOUBLE_EQ(p.seconds_left(16), 1 * 3.0);
  p.finish(17);
  EXPECT_DOUBLE_EQ(p.fraction(), 1);
  EXPECT_DOUBLE_EQ(p.seconds_left(17), 0);
}

TEST(SuiteProgress, NothingToRunIsDone) {
  SuiteProgress p({});
  EXPECT_DOUBLE_EQ(p.fraction(), 1);
  EXPECT_DOUBLE_EQ(p.seconds_left(0), 0);
}

constexpr const char* kFourGpus =
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa1111-0000-0000-0000-000000000000)\n"
    "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbb2222-0000-0000-0000-000000000000)\n"
    "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-cccc3333-0000-0000-0000-000000000000)\n"
    "GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-dddd4444-0000-0000-0000-000000000000)\n";

TEST(VisibleGpus, CudaVisibleDevicesNarrowsWhatNvidiaSmiLists) {
  EXPECT_EQ(visible_gpu_count(nullptr, kFourGpus), 4);
  EXPECT_EQ(visible_gpu_count(nullptr, ""), 0);
  EXPECT_EQ(visible_gpu_count("", kFourGpus), 0);
  EXPECT_EQ(visible_gpu_count("0,2", kFourGpus), 2);
  EXPECT_EQ(visible_gpu_count(" 3 , 1", kFourGpus), 2);
  // The list ends at the first entry that names no GPU.
  EXPECT_EQ(visible_gpu_count("1,7,2", kFourGpus), 1);
  EXPECT_EQ(visible_gpu_count("-1", kFourGpus), 0);
  // UUIDs, a unique prefix being enough; an ambiguous prefix names none.
  EXPECT_EQ(visible_gpu_count("GPU-bbbb2222,GPU-dddd", kFourGpus), 2);
  EXPECT_EQ(visible_gpu_count("GPU-,0", kFourGpus), 0);
  EXPECT_EQ(visible_gpu_count("GPU-zzzz,0", kFourGpus), 0);
}

}  // namespace
}  // namespace pipescope::calibrate
