// Evaluating one plan, the uniform baseline, and the problems the planner refuses.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "pipescope/planner/partition_plan.h"

namespace pipescope::planner {
namespace {

PartitionUnit unit(std::string name, std::int64_t static_bytes, std::vector<UnitOptionCost> options) {
  return PartitionUnit{std::move(name), static_bytes, std::move(options)};
}

// Units with one option: forward 1 s, backward 2 s, 10 activation bytes, 100 static bytes.
PartitionProblem plain_problem(int units, int stages, int micro_batches) {
  PartitionProblem problem;
  for (int u = 0; u < units; ++u) problem.units.push_back(unit("layer", 100, {{1, 2, 10, 0}}));
  problem.stages = stages;
  problem.micro_batches = micro_batches;
  problem.capacity_bytes = 1'000'000;
  return problem;
}

TEST(UniformSplit, DividesLayersEvenlyWithEmbeddingFirstAndHeadLast) {
  // 1 embedding + 8 layers + 1 head over 4 stages: 2 layers each.
  auto b = uniform_boundaries(10, 4, {});
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, (std::vector<int>{0, 3, 5, 7, 10}));
}

TEST(UniformSplit, RemainderLayersGoToTheFirstStages) {
  // 10 layers over 4 stages: 3, 3, 2, 2 (DeepSpeed's partition_uniform).
  auto b = uniform_boundaries(12, 4, {});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int>{0, 4, 7, 9, 12}));
}

TEST(UniformSplit, WithoutEmbeddingOrHeadEveryUnitIsALayer) {
  auto b = uniform_boundaries(7, 3, {false, false});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int>{0, 3, 5, 7}));
}

TEST(UniformSplit, RefusesAStageWithoutUnits) {
  // 1 layer over 3 stages: the middle stage would be empty.
  auto b = uniform_boundaries(3, 3, {});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("empty"), std::string::npos);
}

TEST(EvaluatePlan, SumsTimesAndCountsMemoryPerStage) {
  PartitionProblem problem;
  problem.units = {
      unit("embedding", 50, {{1, 1, 4, 0}, {1, 2, 1, 3}}), unit("layer", 100, {{2, 4, 10, 0}, {2, 6, 2, 20}}),
      unit("layer", 100, {{2, 4, 10, 0}, {2, 6, 2, 20}}), unit("head", 80, {{3, 5, 8, 1}, {3, 8, 3, 9}})};
  problem.stages = 2;
  problem.micro_batches = 4;
  problem.stage_extra_bytes = {7, 11};
  problem.capacity_bytes = 250;
  auto plan = evaluate_plan(problem, {{0, 2, 4}, {1, 0}, {}});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->stages.size(), 2u);
  const StagePlan& s0 = plan->stages[0];
  const StagePlan& s1 = plan->stages[1];
  EXPECT_DOUBLE_EQ(s0.forward_s, 3.0);
  EXPECT_DOUBLE_EQ(s0.backward_s, 8.0);
  EXPECT_EQ(s0.activations_in_flight, 2);  // 1F1B: min(p - 0, m)
  // 7 extra + 150 static + 2 x (1 + 2) activation + max(3, 20) transient.
  EXPECT_EQ(s0.memory_bytes, 7 + 150 + 6 + 20);
  EXPECT_FALSE(s0.overflows);
  EXPECT_EQ(s1.activations_in_flight, 1);
  // 11 + 180 + 1 x (10 + 8) + max(0, 1).
  EXPECT_EQ(s1.memory_bytes, 11 + 180 + 18 + 1);
  EXPECT_FALSE(s1.overflows);
  EXPECT_EQ(plan->peak_memory_bytes, 210);
  EXPECT_TRUE(plan->fits);
  // Stage times (11, 14) per micro-batch. Stage 1 runs F0 B0 F1 B1 ... back to back from t = 3
  // (stage 0's first forward), 4 x 14 = 56 s, and stage 0's last backward follows: 3 + 56 + 8.
  EXPECT_DOUBLE_EQ(plan->iteration_s, 67.0);
}

TEST(EvaluatePlan, FlagsStagesOverCapacity) {
  PartitionProblem problem = plain_problem(4, 2, 4);
  problem.capacity_bytes = 230;  // stage 0 with 2 units: 200 + 2 x 20 = 240; stage 1: 220
  auto plan = evaluate_plan(problem, {{0, 2, 4}, {0, 0}, {}});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->stages[0].overflows);
  EXPECT_FALSE(plan->stages[1].overflows);
  EXPECT_FALSE(plan->fits);
  EXPECT_EQ(plan->peak_memory_bytes, 240);
}

TEST(EvaluatePlan, AStageNeedsTheFullerOfItsPipelineAndOptimizerStepPhases) {
  // 4 units of 100 static bytes, 10 activation bytes, 2 stages, m 4: stage 0 holds 2 micro-batches
  // (pipeline phase 2 x 20 = 40), stage 1 one (20). The step needs 15 bytes per unit (30 per
  // stage): it is the fuller phase of stage 1 only.
  PartitionProblem problem = plain_problem(4, 2, 4);
  for (PartitionUnit& u : problem.units) u.step_bytes = 15;
  auto plan = evaluate_plan(problem, {{0, 2, 4}, {0, 0}, {}});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->stages[0].memory_bytes, 200 + 40);
  EXPECT_EQ(plan->stages[1].memory_bytes, 200 + 30);
  problem.units[1].step_bytes = -1;
  EXPECT_FALSE(validate(problem).ok());
}

TEST(EvaluatePlan, GPipeStagesHoldEveryMicrobatch) {
  PartitionProblem problem = plain_problem(4, 2, 3);
  problem.schedule = ScheduleKind::kGPipe;
  auto plan = evaluate_plan(problem, {{0, 1, 4}, {0, 0}, {}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->stages[0].activations_in_flight, 3);
  EXPECT_EQ(plan->stages[1].memory_bytes, 300 + 3 * 30);
}

TEST(EvaluatePlan, RejectsMalformedPlans) {
  const PartitionProblem problem = plain_problem(4, 2, 4);
  EXPECT_FALSE(evaluate_plan(problem, {{0, 4}, {0}, {}}).ok());        // wrong stage count
  EXPECT_FALSE(evaluate_plan(problem, {{0, 2, 3}, {0, 0}, {}}).ok());  // does not end at n
  EXPECT_FALSE(evaluate_plan(problem, {{0, 0, 4}, {0, 0}, {}}).ok());  // empty stage
  EXPECT_FALSE(evaluate_plan(problem, {{0, 2, 4}, {0, 1}, {}}).ok());  // no option 1
}

TEST(UniformPlan, TakesTheFastestOptionThatFitsPerStage) {
  // Option 0: 1 + 2 s, 10 bytes kept; option 1 (recompute): 1 + 3 s, 2 bytes kept.
  PartitionProblem problem;
  for (int u = 0; u < 4; ++u) problem.units.push_back(unit("layer", 0, {{1, 2, 10, 0}, {1, 3, 2, 0}}));
  problem.stages = 2;
  problem.micro_batches = 4;
  problem.capacity_bytes = 25;  // no embedding / head: 2 units a stage
  problem.uniform_layout = {false, false};
  auto plan = uniform_plan(problem);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  // Stage 0 holds 2 micro-batches: option 0 needs 40 > 25, option 1 needs 8. Stage 1: 20 fits.
  EXPECT_EQ(plan->choice.options, (std::vector<int>{1, 0}));
  EXPECT_TRUE(plan->fits);
}

TEST(PartitionProblem, RejectsMoreStagesThanUnits) {
  auto status = validate(plain_problem(3, 4, 4));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("more pipeline stages (4) than units"), std::string::npos);
}

TEST(PartitionProblem, RejectsInterleavedSchedule) {
  PartitionProblem problem = plain_problem(4, 2, 4);
  problem.schedule = ScheduleKind::kInterleaved;
  EXPECT_FALSE(validate(problem).ok());
}

TEST(PartitionProblem, RejectsUnitsWithDifferentOptionCounts) {
  PartitionProblem problem = plain_problem(4, 2, 4);
  problem.units[2].options.push_back({1, 3, 2, 0});
  EXPECT_FALSE(validate(problem).ok());
}

TEST(PartitionProblem, RejectsUnknownOrRepeatedAllowedOptions) {
  PartitionProblem problem = plain_problem(4, 2, 4);
  problem.allowed_options = {1};
  EXPECT_FALSE(validate(problem).ok());
  problem.allowed_options = {0, 0};
  EXPECT_FALSE(validate(problem).ok());
}

TEST(PartitionProblem, RejectsNegativeOrNonFiniteNumbers) {
  PartitionProblem problem = plain_problem(4, 2, 4);
  problem.units[1].options[0].backward_s = -1;
  EXPECT_FALSE(validate(problem).ok());
  problem = plain_problem(4, 2, 4);
  problem.p2p_forward_s = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(validate(problem).ok());
  problem = plain_problem(4, 2, 4);
  problem.stage_extra_bytes = {1, 2, 3};
  EXPECT_FALSE(validate(problem).ok());
}

}  // namespace
}  // namespace pipescope::planner
