// Refining a profile with a run's measured kernel, stage and memory figures per pipeline stage.
#include <gtest/gtest.h>

#include "pipescope/calibrate/run_refinement.h"

namespace pipescope::calibrate {
namespace {

planner::CalibrationProfile profile() {
  planner::CalibrationProfile p;
  p.gpu = "h100-80gb";
  p.gemm = {{1024, 1024, 1024, 0.3, "s"}, {8192, 8192, 8192, 0.8, "s"}};
  p.attention_forward = {{1024, 128, 0.4, "s"}, {8192, 128, 0.6, "s"}};
  p.attention_backward = {{1024, 128, 0.3, "s"}, {8192, 128, 0.5, "s"}};
  p.overheads.allocator_reserve_fraction = {0.1, "s"};
  return p;
}

// Four stages, each predicted at 10 + 20 ms per micro-batch of which 16 ms GEMM and 4 ms
// attention, measured at 12 + 24 ms. Reserved memory measured as allocated * 1.25 + 3 GiB of
// fixed overheads, which the profile prices the same: the refit reserve fraction is 0.25.
RunObservation run() {
  RunObservation r;
  r.memory_figure = "reserved";
  r.source = "run7/";
  const double fixed = 3.0 * (1ull << 30);
  for (int s = 0; s < 4; ++s) {
    StageObservation o;
    o.stage = s;
    o.predicted_forward_s = 0.010;
    o.predicted_backward_s = 0.020;
    o.measured_forward_s = 0.012;
    o.measured_backward_s = 0.024;
    o.predicted_gemm_s = 0.016;
    o.predicted_attention_s = 0.004;
    o.predicted_allocated_bytes = (40.0 - 5 * s) * (1ull << 30);
    o.predicted_reserved_bytes = o.predicted_allocated_bytes * 1.1 + fixed;
    o.measured_peak_bytes = o.predicted_allocated_bytes * 1.25 + fixed;
    r.stages.push_back(o);
  }
  return r;
}

TEST(RefineWithRun, EachCategoryMovesByItsOwnKernelTime) {
  RunObservation r = run();
  for (StageObservation& s : r.stages) {
    s.measured_gemm_s = 0.020;       // GEMMs 1.25x slower than predicted
    s.measured_attention_s = 0.003;  // attention 0.75x: faster
  }
  auto refined = refine_with_run(profile(), r);
  ASSERT_TRUE(refined.ok()) << refined.error().message;
  EXPECT_EQ(refined->compute_basis, "kernels");
  EXPECT_NEAR(refined->gemm_scale, 1.25, 1e-12);
  EXPECT_NEAR(refined->attention_scale, 0.75, 1e-12);
  EXPECT_NEAR(refined->profile.gemm[1].efficiency, 0.8 / 1.25, 1e-12);
  EXPECT_NEAR(refined->profile.attention_forward[0].efficiency, 0.4 / 0.75, 1e-12);
  EXPECT_NEAR(refined->profile.attention_backward[1].efficiency, 0.5 / 0.75, 1e-12);
  EXPECT_EQ(
      refined->profile.gemm[0].source,
      "s; divided by 1.2500, the run's GEMM kernel time over the planner's GEMM time per micro-batch in the "
      "traces in run7/");
}

TEST(RefineWithRun, MemoryBoundWorkMovesTheHbmBandwidthFractionByItsOwnKernelTime) {
  // The planner's 6 ms of memory-bound work a micro-batch per stage took 9 ms (eager kernels):
  // the fraction of HBM bandwidth that prices it falls by 1.5; GEMM and attention move apart.
  RunObservation r = run();
  for (StageObservation& s : r.stages) {
    s.measured_gemm_s = 0.020;
    s.measured_attention_s = 0.003;
    s.predicted_memory_bound_s = 0.006;
    s.measured_memory_bound_s = 0.009;
  }
  planner::CalibrationProfile p = profile();
  p.hbm_bandwidth_fraction = {0.9, "datasheet"};
  auto refined = refine_with_run(p, r);
  ASSERT_TRUE(refined.ok()) << refined.error().message;
  EXPECT_NEAR(refined->memory_bound_scale, 1.5, 1e-12);
  EXPECT_NEAR(refined->profile.hbm_bandwidth_fraction.value, 0.6, 1e-12);
  EXPECT_NE(refined->profile.hbm_bandwidth_fraction.source.find("datasheet; divided by 1.5000, the run's "
                                                                "memory-bound kernel time"),
            std::string::npos);
  EXPECT_NEAR(refined->gemm_scale, 1.25, 1e-12);
  const PredictionError before = prediction_error(r);
  ASSERT_TRUE(before.has_memory_bound);
  EXPECT_NEAR(before.memory_bound, 0.006 / 0.009 - 1, 1e-12);
  // Faster than the GPU's bandwidth allows: held at 1, and said.
  for (StageObservation& s : r.stages) s.measured_memory_bound_s = 0.003;
  auto capped = refine_with_run(p, r);
  ASSERT_TRUE(capped.ok());
  EXPECT_DOUBLE_EQ(capped->profile.hbm_bandwidth_fraction.value, 1.0);
}

TEST(RefineWithRun, AMissingCategoryIsLeftAloneAndSaidSo) {
  RunObservation r = run();
  for (StageObservation& s : r.stages) s.measured_gemm_s = 0.020;
  auto refined = refine_with_run(profile(), r);
  ASSERT_TRUE(refined.ok());
  EXPECT_NEAR(refined->gemm_scale, 1.25, 1e-12);
  EXPECT_DOUBLE_EQ(refined->attention_scale, 1);
  EXPECT_EQ(refined->profile.attention_forward, profile().attention_forward);
  EXPECT_NE(refined->notes[0].find("no fused-attention kernel"), std::string::npos) << refined->notes[0];
}

TEST(RefineWithRun, WithoutKernelsStageTimesScaleComputeAndHoldTheRest) {
  // 30 ms predicted = 20 ms GEMM + attention + 10 ms else; 36 ms measured: compute must take
  // 26 ms, 1.3x its prediction.
  auto refined = refine_with_run(profile(), run());
  ASSERT_TRUE(refined.ok()) << refined.error().message;
  EXPECT_EQ(refined->compute_basis, "stage times");
  EXPECT_NEAR(refined->gemm_scale, 1.3, 1e-12);
  EXPECT_NEAR(refined->attention_scale, 1.3, 1e-12);
  EXPECT_NEAR(refined->profile.gemm[1].efficiency, 0.8 / 1.3, 1e-12);
  // No split known at all: every efficiency by measured / predicted stage time, 36 / 30.
  RunObservation bare = run();
  for (StageObservation& s : bare.stages) s.predicted_gemm_s = s.predicted_attention_s = 0;
  auto whole = refine_with_run(profile(), bare);
  ASSERT_TRUE(whole.ok());
  EXPECT_NEAR(whole->gemm_scale, 1.2, 1e-12);
}

TEST(RefineWithRun, ARunFasterThanTheRestOfThePredictionAloneIsNotForcedIntoCompute) {
  RunObservation r = run();
  for (StageObservation& s : r.stages) s.measured_forward_s = s.measured_backward_s = 0.004;  // 8 ms < 10 ms
  auto refined = refine_with_run(profile(), r);
  ASSERT_TRUE(refined.ok());  // memory still refines
  EXPECT_EQ(refined->compute_basis, "");
  EXPECT_EQ(refined->profile.gemm, profile().gemm);
}

TEST(RefineWithRun, RefitsTheReserveFractionFromReservedMemory) {
  auto refined = refine_with_run(profile(), run());
  ASSERT_TRUE(refined.ok());
  EXPECT_TRUE(refined->memory_refined);
  EXPECT_NEAR(refined->profile.overheads.allocator_reserve_fraction.value, 0.25, 1e-9);
  EXPECT_EQ(refined->profile.overheads.allocator_reserve_fraction.source.rfind("fitted: least squares", 0),
            0u);
}

TEST(RefineWithRun, TheOptimizerStepsSegmentsInTheHeldFigureAreNotTakenForFragmentation) {
  // A recipe whose step takes 8 GiB of new segments per stage (DeepSpeed's bf16 gradient copy):
  // the plan's held figure and the traces both carry them on top of allocated * (1 + f) + fixed,
  // so the refit fraction is still the run's 0.25.
  RunObservation r = run();
  const double step = 8.0 * (1ull << 30);
  for (StageObservation& o : r.stages) {
    o.predicted_reserved_bytes += step;
    o.measured_peak_bytes += step;
  }
  auto refined = refine_with_run(profile(), r);
  ASSERT_TRUE(refined.ok());
  EXPECT_TRUE(refined->memory_refined);
  EXPECT_NEAR(refined->profile.overheads.allocator_reserve_fraction.value, 0.25, 1e-9);
}

TEST(RefineWithRun, AReserveFractionOutsideItsRangeKeepsTheProfilesAndSaysWhy) {
  // Less reserved than allocated: f = -0.1, which no allocator does.
  RunObservation r = run();
  for (StageObservation& s : r.stages)
    s.measured_peak_bytes = s.predicted_allocated_bytes * 0.9 + 3.0 * (1ull << 30);
  auto refined = refine_with_run(profile(), r);
  ASSERT_TRUE(refined.ok());
  EXPECT_FALSE(refined->memory_refined);
  EXPECT_EQ(refined->profile.overheads.allocator_reserve_fraction,
            profile().overheads.allocator_reserve_fraction);
  EXPECT_EQ(
      refined->notes.back(),
      "the reserved memory measured needs an allocator reserve fraction of -0.100, outside (0, 1): the "
      "planner's allocated memory itself is off (or memory outside the allocator grew); the profile's 0.100 "
      "is kept");
}

TEST(RefineWithRun, AllocatedMemoryIsComparedButNotRefined) {
  RunObservation r = run();
  r.memory_figure = "allocated";
  auto refined = refine_with_run(profile(), r);
  ASSERT_TRUE(refined.ok());
  EXPECT_FALSE(refined->memory_refined);
  EXPECT_DOUBLE_EQ(refined->profile.overheads.allocator_reserve_fraction.value, 0.1);
}

TEST(RefineWithRun, PredictionErrorIsSignedForTimesAndAbsoluteForMemory) {
  RunObservation r = run();
  for (StageObservation& s : r.stages) s.measured_gemm_s = 0.020;
  const PredictionError e = prediction_error(r);
  EXPECT_NEAR(e.compute, 0.030 / 0.036 - 1, 1e-12);
  EXPECT_NEAR(e.gemm, 0.016 / 0.020 - 1, 1e-12);
  EXPECT_FALSE(e.has_attention);
  ASSERT_TRUE(e.has_memory);
  // |1.1 A + F - (1.25 A + F)| / (1.25 A + F) per stage, A = 40, 35, 30, 25 GiB, F = 3 GiB.
  double expected = 0;
  for (double a : {40.0, 35.0, 30.0, 25.0}) expected += 0.15 * a / (1.25 * a + 3) / 4;
  EXPECT_NEAR(e.memory, expected, 1e-12);
}

TEST(RefineWithRun, RefusesARunThatShowsNothing) {
  RunObservation r = run();
  r.memory_figure = "none";
  for (auto& s : r.stages) s.measured_forward_s = s.measured_backward_s = 0;
  auto refined = refine_with_run(profile(), r);
  ASSERT_FALSE(refined.ok());
  EXPECT_EQ(refined.error().message,
            "nothing in the traces in run7/ could refine the profile; the traces hold no forward/backward "
            "NVTX ranges "
            "per stage: compute not refined; the traces hold no memory records: memory not refined");
}

}  // namespace
}  // namespace pipescope::calibrate
