// Refining a profile with a run's measured stage times and reserved memory.
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

// Reserved memory measured as allocated * 1.25 + 3 GiB of fixed overheads; the profile prices
// the same fixed part, so the refit reserve fraction is 0.25 exactly.
RunObservation run() {
  RunObservation r;
  r.memory_figure = "reserved";
  r.source = "test traces";
  const double fixed = 3.0 * (1ull << 30);
  for (int s = 0; s < 4; ++s) {
    StageObservation o;
    o.stage = s;
    o.predicted_forward_s = 0.010;
    o.predicted_backward_s = 0.020;
    o.measured_forward_s = 0.012;
    o.measured_backward_s = 0.024;
    o.predicted_allocated_bytes = (40.0 - 5 * s) * (1ull << 30);
    o.predicted_reserved_bytes = o.predicted_allocated_bytes * 1.1 + fixed;
    o.measured_peak_bytes = o.predicted_allocated_bytes * 1.25 + fixed;
    r.stages.push_back(o);
  }
  return r;
}

TEST(RefineWithRun, ScalesComputeEfficienciesByMeasuredOverPredicted) {
  auto refined = refine_with_run(profile(), run());
  ASSERT_TRUE(refined.ok()) << refined.error().message;
  EXPECT_NEAR(refined->compute_scale, 1.2, 1e-12);
  EXPECT_NEAR(refined->profile.gemm[1].efficiency, 0.8 / 1.2, 1e-12);
  EXPECT_NEAR(refined->profile.attention_backward[0].efficiency, 0.3 / 1.2, 1e-12);
  EXPECT_NE(refined->profile.gemm[0].source.find("divided by 1.2000"), std::string::npos);
}

TEST(RefineWithRun, RefitsTheReserveFractionFromReservedMemory) {
  auto refined = refine_with_run(profile(), run());
  ASSERT_TRUE(refined.ok());
  EXPECT_TRUE(refined->memory_refined);
  EXPECT_NEAR(refined->profile.overheads.allocator_reserve_fraction.value, 0.25, 1e-9);
}

TEST(RefineWithRun, AllocatedMemoryIsComparedButNotRefined) {
  RunObservation r = run();
  r.memory_figure = "allocated";
  auto refined = refine_with_run(profile(), r);
  ASSERT_TRUE(refined.ok());
  EXPECT_FALSE(refined->memory_refined);
  EXPECT_DOUBLE_EQ(refined->profile.overheads.allocator_reserve_fraction.value, 0.1);
}

TEST(RefineWithRun, PredictionErrorIsSignedForTimeAndAbsoluteForMemory) {
  const PredictionError e = prediction_error(run());
  EXPECT_NEAR(e.compute, 0.030 / 0.036 - 1, 1e-12);
  EXPECT_TRUE(e.has_memory);
  EXPECT_GT(e.memory, 0);
}

TEST(RefineWithRun, RefusesARunThatShowsNothing) {
  RunObservation r = run();
  r.memory_figure = "none";
  for (auto& s : r.stages) s.measured_forward_s = s.measured_backward_s = 0;
  auto refined = refine_with_run(profile(), r);
  ASSERT_FALSE(refined.ok());
  EXPECT_EQ(
      refined.error().message,
      "the traces in test traces show neither forward/backward ranges nor reserved memory per stage: nothing "
      "to refine the profile with");
}

}  // namespace
}  // namespace pipescope::calibrate
