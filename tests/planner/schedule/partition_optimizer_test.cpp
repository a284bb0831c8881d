// The partition optimizer on instances small enough to solve by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpt_partition_problem.h"
#include "pipescope/planner/partition_optimizer.h"

namespace pipescope::planner {
namespace {

// n equal units, 1F1B, no static memory: option 0 keeps 10 bytes per micro-batch for 1 + 2 s,
// option 1 (full recompute) keeps 2 bytes for 1 + 3 s.
PartitionProblem layers(int n, int stages, int micro_batches, bool with_recompute) {
  PartitionProblem problem;
  for (int u = 0; u < n; ++u) {
    PartitionUnit unit{"layer", 0, {{1, 2, 10, 0}}};
    if (with_recompute) unit.options.push_back({1, 3, 2, 0});
    problem.units.push_back(unit);
  }
  problem.stages = stages;
  problem.micro_batches = micro_batches;
  problem.capacity_bytes = 1'000'000;
  problem.uniform_layout = {false, false};
  return problem;
}

PartitionResult optimize(const PartitionProblem& problem) {
  auto result = optimize_partition(problem);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.ok() ? *result : PartitionResult{};
}

TEST(PartitionOptimizer, EqualUnitsSplitEvenlyForTime) {
  // 4 units on 2 stages, m = 4. 2 | 2: (m + p - 1) 3 x 2 = 30. 1 | 3: stage 1 alone runs 4 x 9
  // after stage 0's first forward: >= 39. 3 | 1: stage 0 alone runs 4 x 9 = 36.
  PartitionProblem problem = layers(4, 2, 4, false);
  problem.balance = Balance::kTime;
  const PartitionResult r = optimize(problem);
  EXPECT_EQ(r.plan.choice.boundaries, (std::vector<int>{0, 2, 4}));
  EXPECT_DOUBLE_EQ(r.plan.iteration_s, 30.0);
  EXPECT_TRUE(r.any_fits);
  EXPECT_DOUBLE_EQ(r.fastest_fitting_s, 30.0);
  EXPECT_TRUE(r.proven_optimal);
}

TEST(PartitionOptimizer, MemoryBalanceMovesUnitsOffTheFirstStage) {
  // 6 units, p = 2, m = 4: stage 0 holds 2 micro-batches, stage 1 one, so a unit costs 20 bytes
  // on stage 0 and 10 on stage 1. Splits k | 6 - k, stage times 3k and 3(6 - k):
  //   3 | 3: T = (m + 1) 9 = 45 (fastest, and uniform), peak max(60, 30) = 60
  //   2 | 4: stage 1 busy from 2 to 2 + 4 x 12 = 50, then stage 0's last backward: T = 54,
  //          peak max(40, 40) = 40
  //   4 | 2: T = 50 (>= 4 x 12 on stage 0), peak 80.   1 | 5: T >= 3 + 4 x 15 = 63, peak 50.
  PartitionProblem problem = layers(6, 2, 4, false);
  problem.time_slack = 0.25;  // bound max(1.25 x 45, 45) = 56.25: 2 | 4 is within it
  PartitionResult r = optimize(problem);
  EXPECT_EQ(r.plan.choice.boundaries, (std::vector<int>{0, 2, 6}));
  EXPECT_EQ(r.plan.peak_memory_bytes, 40);
  EXPECT_DOUBLE_EQ(r.plan.iteration_s, 54.0);
  EXPECT_DOUBLE_EQ(r.time_bound_s, 56.25);
  ASSERT_TRUE(r.uniform.has_value());
  EXPECT_EQ(r.uniform->peak_memory_bytes, 60);

  problem.time_slack = 0.02;  // bound 45.9: only 3 | 3 is fast enough
  r = optimize(problem);
  EXPECT_EQ(r.plan.choice.boundaries, (std::vector<int>{0, 3, 6}));
  EXPECT_EQ(r.plan.peak_memory_bytes, 60);
}

TEST(PartitionOptimizer, AutoRecomputeGoesWhereMemoryIsShort) {
  // 4 units, p = 2, m = 4, capacity 25 bytes. 2 | 2: stage 0 (2 micro-batches) needs 40 bytes
  // without recompute, 8 with; stage 1 needs 20 without. With F = (2, 2), B = (6, 4):
  //   stage 0: F0 [0,2] F1 [2,4] B0 [8,14] F2 [14,16] B1 [16,22] F3 [22,24] B2 [24,30] B3 [30,36]
  //   stage 1: F0 [2,4] B0 [4,8] F1 [8,10] B1 [10,14] F2 [16,18] B2 [18,22] F3 [24,26] B3 [26,30]
  // T = 36, against 40 = (m + 1) x 8 when both stages recompute. Uneven splits are slower:
  // 1 | 3 must recompute stage 1 (30 > 25), >= 3 + 4 x 12; 3 | 1 recomputes stage 0, >= 4 x 12.
  PartitionProblem problem = layers(4, 2, 4, true);
  problem.capacity_bytes = 25;
  problem.balance = Balance::kTime;
  const PartitionResult r = optimize(problem);
  EXPECT_EQ(r.plan.choice.boundaries, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(r.plan.choice.options, (std::vector<int>{1, 0}));
  EXPECT_TRUE(r.plan.fits);
  EXPECT_DOUBLE_EQ(r.plan.iteration_s, 36.0);
}

TEST(PartitionOptimizer, ExplicitRecomputeHoldsForEveryStage) {
  PartitionProblem problem = layers(4, 2, 4, true);
  problem.allowed_options = {1};
  problem.balance = Balance::kTime;
  const PartitionResult r = optimize(problem);
  EXPECT_EQ(r.plan.choice.options, (std::vector<int>{1, 1}));
  EXPECT_DOUBLE_EQ(r.plan.iteration_s, 5 * 8.0);  // (m + p - 1) x 2 x (1 + 3)
}

TEST(PartitionOptimizer, NothingFitsReturnsTheLeastPeakPlanFlagged) {
  // Capacity 0: every stage overflows. Least peak: recompute everywhere (2 bytes a unit and
  // micro-batch); 1 | 3 peaks at max(2 x 2, 3 x 2) = 6, 2 | 2 at max(8, 4) = 8.
  for (Balance balance : {Balance::kMemory, Balance::kTime}) {
    PartitionProblem problem = layers(4, 2, 4, true);
    problem.capacity_bytes = 0;
    problem.balance = balance;
    const PartitionResult r = optimize(problem);
    EXPECT_FALSE(r.any_fits);
    EXPECT_FALSE(r.plan.fits);
    EXPECT_EQ(r.plan.choice.boundaries, (std::vector<int>{0, 1, 4}));
    EXPECT_EQ(r.plan.choice.options, (std::vector<int>{1, 1}));
    EXPECT_EQ(r.plan.peak_memory_bytes, 6);
    EXPECT_TRUE(r.plan.stages[0].overflows);
    EXPECT_TRUE(r.plan.stages[1].overflows);
  }
}

TEST(PartitionOptimizer, OneStageTakesEverything) {
  PartitionProblem problem = layers(5, 1, 3, true);
  problem.balance = Balance::kTime;
  const PartitionResult r = optimize(problem);
  EXPECT_EQ(r.plan.choice.boundaries, (std::vector<int>{0, 5}));
  EXPECT_DOUBLE_EQ(r.plan.iteration_s, 3 * 15.0);
}

TEST(PartitionOptimizer, AsManyStagesAsUnitsGivesOneUnitEach) {
  PartitionProblem problem = layers(5, 5, 8, false);
  const PartitionResult r = optimize(problem);
  EXPECT_EQ(r.plan.choice.boundaries, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_DOUBLE_EQ(r.plan.iteration_s, (8 + 4) * 3.0);
}

TEST(PartitionOptimizer, RejectsMoreStagesThanUnits) {
  auto r = optimize_partition(layers(3, 4, 4, false));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("more pipeline stages"), std::string::npos);
}

TEST(PartitionOptimizer, RejectsInterleavedSchedule) {
  PartitionProblem problem = layers(8, 2, 4, false);
  problem.schedule = ScheduleKind::kInterleaved;
  auto r = optimize_partition(problem);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("interleaved"), std::string::npos);
}

TEST(PartitionOptimizer, UniformIsAbsentWhenItWouldLeaveAStageEmpty) {
  // Embedding + 1 layer + head on 3 stages: uniform has no layer for the middle stage, but the
  // optimizer still places one unit per stage.
  PartitionProblem problem = layers(3, 3, 4, false);
  problem.uniform_layout = {};
  const PartitionResult r = optimize(problem);
  EXPECT_FALSE(r.uniform.has_value());
  EXPECT_EQ(r.plan.choice.boundaries, (std::vector<int>{0, 1, 2, 3}));
}

TEST(PartitionOptimizer, SearchBudgetCutsShortWithoutProof) {
  PartitionProblem problem = layers(12, 4, 8, true);
  problem.max_search_work = 6 * (2 * 4 * 8 + 12);  // six nodes: one descent to a plan, not a proof
  problem.balance = Balance::kTime;
  problem.p2p_forward_s = 0.3;
  const PartitionResult r = optimize(problem);
  EXPECT_FALSE(r.proven_optimal);
  EXPECT_EQ(r.plan.stages.size(), 4u);
  // The proven bound is below the plan's time, and so is the optimum: (m + p - 1) x 3 = 33 s
  // with three units a stage, no recompute needed, plus p2p.
  EXPECT_LT(r.iteration_lower_bound_s, r.plan.iteration_s);
  EXPECT_GT(r.optimality_gap, 0);
}

// The size the issue asks for, in its hard case: 128 units (126 layers of a 175B-class GPT at
// tp 8, embedding, head; benches/support/gpt_partition_problem.h) on 64 stages with as
// many micro-batches as stages, none / selective / full recompute per stage, 2 ms p2p. Within
// the default budget (about a second of one core, counted in work, so the same on any machine)
// both objectives are proven optimal; before the pivot-path bound neither was (the memory
// objective stopped within 40 % of the optimum, the time objective within 1.3 %).
PartitionProblem gpt_128_units_on_64_stages(Balance balance) {
  PartitionProblem problem = fixtures::gpt_partition_problem(126, 64, balance, 0.002);
  problem.micro_batches = 64;
  return problem;
}

TEST(PartitionOptimizer, Proves128UnitsOn64StagesWithAsManyMicroBatchesWithinTheDefaultBudget) {
  for (Balance balance : {Balance::kMemory, Balance::kTime}) {
    const PartitionProblem problem = gpt_128_units_on_64_stages(balance);
    const PartitionResult r = optimize(problem);
    ASSERT_TRUE(r.uniform.has_value());
    EXPECT_TRUE(r.proven_optimal) << (balance == Balance::kMemory ? "memory" : "time") << ": gap "
                                  << r.optimality_gap;
    EXPECT_TRUE(r.plan.fits);
    if (balance == Balance::kMemory) {
      EXPECT_LT(r.plan.peak_memory_bytes, r.uniform->peak_memory_bytes);
      EXPECT_LE(r.plan.iteration_s, r.time_bound_s);
    } else {
      EXPECT_LE(r.plan.iteration_s, r.uniform->iteration_s);
    }
  }
}

}  // namespace
}  // namespace pipescope::planner
