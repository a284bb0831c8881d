// The pivot-path bound (pivot_bound.h): never above the best completion of any partial plan from
// either end (brute force over every plan of small random instances, 1F1B and GPipe, with and
// without p2p latency and the partial option), exact at the root on instances whose optimum has
// one stage with a layer more than the others, and what its families are made of.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "partition_search.h"
#include "partition_test_support.h"
#include "pivot_bound.h"

namespace pipescope::planner::detail {
namespace {

TEST(PivotTables, NeverAboveTheBestCompletionOfAPartialPlan) {
  std::mt19937 rng(4242);
  int nodes = 0, tight = 0;
  for (int instance = 0; instance < 200; ++instance) {
    const PartitionProblem problem = test::random_problem(rng, {7, 4, 6});
    auto ctx = PartitionContext::build(problem);
    ASSERT_TRUE(ctx.ok());
    const std::vector<PartitionPlan> plans = test::all_plans(problem);
    const int p = problem.stages;
    const PivotFamilies families = PivotFamilies::find(problem, *ctx);
    ASSERT_GT(families.classes, 0);
    PivotTables suffix, prefix;
    suffix.set_families(&families);
    prefix.set_families(&families);
    for (const PartitionPlan& probe : {plans.front(), plans[plans.size() / 2], plans.back()}) {
      const std::int64_t limit = probe.peak_memory_bytes;
      suffix.build_suffix(problem, *ctx, limit);
      prefix.build_prefix(problem, *ctx, limit);
      // By brute force: the best completion of every fixed prefix (stages 0..k-1) and suffix
      // (stages k..p-1) of a plan within the limit, and the fronts' bound for it.
      std::map<std::vector<int>, double> best, lower;
      for (const PartitionPlan& plan : plans) {
        if (plan.peak_memory_bytes > limit) continue;
        std::vector<PivotState> heads{PivotState::empty_prefix()}, tails(p + 1, PivotState::empty_suffix());
        for (int s = 0; s < p; ++s)
          heads.push_back(
              suffix.after_prefix(heads.back(), s, plan.stages[s].forward_s, plan.stages[s].backward_s));
        for (int s = p - 1; s >= 0; --s)
          tails[s] =
              prefix.before_suffix(tails[s + 1], s, plan.stages[s].forward_s, plan.stages[s].backward_s);
        for (int k = 0; k <= p; ++k) {
          const int unit = plan.choice.boundaries[k];
          for (const auto& [key, lower_s] :
               {std::pair{test::stages_key(plan, 0, k), suffix.bound_after_prefix(heads[k], k, unit)},
                std::pair{test::stages_key(plan, k, p), prefix.bound_before_suffix(tails[k], k, unit)}}) {
            auto [at, fresh] = best.try_emplace(key, plan.iteration_s);
            if (!fresh) at->second = std::min(at->second, plan.iteration_s);
            lower[key] = lower_s;
          }
        }
      }
      for (const auto& [key, best_s] : best) {
        EXPECT_LE(lower[key], best_s) << "instance " << instance;
        ++nodes;
        tight += lower[key] >= 0.999 * best_s ? 1 : 0;
      }
    }
  }
  EXPECT_GT(tight, nodes / 4);  // often exact on instances this small
  std::cout << tight << " of " << nodes << " partial plans bounded exactly\n";
}

// n equal layers on p stages with n = p k + 1: some stage takes k + 1 layers, and which one
// decides the time. The least over the splits of the largest pivot term is the optimum itself
// (brute force), where a convex combination of paths averages the extra layer away.
TEST(PivotTables, RootBoundIsTheOptimumWhenOneStageMustTakeALayerMore) {
  for (int p : {3, 4}) {
    for (int m : {p, 2 * p, 4 * p}) {
      PartitionProblem problem;
      for (int u = 0; u < 2 * p + 1; ++u) problem.units.push_back({"layer", 10, {{1.0, 2.0, 5, 0}}});
      problem.stages = p;
      problem.micro_batches = m;
      problem.capacity_bytes = 1'000'000;
      problem.p2p_forward_s = problem.p2p_backward_s = 0.05;
      auto ctx = PartitionContext::build(problem);
      ASSERT_TRUE(ctx.ok());
      double optimum = std::numeric_limits<double>::infinity();
      for (const PartitionPlan& plan : test::all_plans(problem))
        optimum = std::min(optimum, plan.iteration_s);
      const PivotFamilies families = PivotFamilies::find(problem, *ctx);
      PivotTables tables;
      tables.set_families(&families);
      tables.build_suffix(problem, *ctx, problem.capacity_bytes);
      EXPECT_NEAR(tables.bound_after_prefix(PivotState::empty_prefix(), 0, 0), optimum, 1e-8 * optimum)
          << "p=" << p << " m=" << m;
      tables.build_prefix(problem, *ctx, problem.capacity_bytes);
      EXPECT_NEAR(tables.bound_before_suffix(PivotState::empty_suffix(), p, problem.units.size()), optimum,
                  1e-8 * optimum)
          << "p=" << p << " m=" << m;
    }
  }
}

TEST(PivotFamilies, WeighThePivotStageMostAndIncludeTheWalks) {
  PartitionProblem problem;
  for (int u = 0; u < 8; ++u) problem.units.push_back({"layer", 10, {{1.0, 2.0, 5, 0}}});
  problem.stages = 4;
  problem.micro_batches = 8;
  problem.capacity_bytes = 1'000'000;
  auto ctx = PartitionContext::build(problem);
  ASSERT_TRUE(ctx.ok());
  const PivotFamilies f = PivotFamilies::find(problem, *ctx);
  ASSERT_EQ(f.pivots.size(), 4u);
  for (int t = 0; t < 4; ++t) {
    bool walk = false;
    for (const PivotFamilies::Pivot& pivot : f.pivots[t]) {
      walk = walk || (pivot.forward == 8 && pivot.backward == 8);
      // Every path runs at least one forward and one backward on the stages it crosses.
      EXPECT_GE(pivot.forward, 1);
      EXPECT_GE(pivot.backward, 1);
    }
    EXPECT_TRUE(walk) << "stage " << t;
    if (t < 3) {
      EXPECT_GE(f.alpha_forward[t], 1);  // stages before a pivot are crossed at least once
      EXPECT_GE(f.alpha_backward[t], 1);
    }
  }
  EXPECT_GT(f.work, 0);
}

}  // namespace
}  // namespace pipescope::planner::detail
