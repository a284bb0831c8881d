// The optimizer against brute force: every split and every per-stage option of small random
// instances is evaluated with evaluate_plan(), the objectives are applied here as the header
// states them, and the optimizer must reach the same (time, peak). Times are whole seconds and
// memory whole bytes, so every sum is exact and results compare with ==.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "partition_test_support.h"
#include "pipescope/planner/partition_optimizer.h"

namespace pipescope::planner {
namespace {

using test::all_plans;
using test::random_problem;

// The objective as partition_optimizer.h states it, applied to every plan: (time, peak) of the
// optimum; for kTime the peak is that of the least-peak plan among the fastest, which the
// optimizer need not return.
std::pair<double, std::int64_t> brute_force_optimum(const PartitionProblem& problem) {
  const std::vector<PartitionPlan> plans = all_plans(problem);
  const auto by_time = [](const PartitionPlan& x) {
    return std::make_tuple(x.iteration_s, x.peak_memory_bytes);
  };
  const auto by_peak = [](const PartitionPlan& x) {
    return std::make_tuple(x.peak_memory_bytes, x.iteration_s);
  };
  const bool any_fits =
      std::any_of(plans.begin(), plans.end(), [](const PartitionPlan& x) { return x.fits; });
  std::tuple<double, std::int64_t> best_time{std::numeric_limits<double>::infinity(), 0};
  for (const PartitionPlan& x : plans) {
    if (x.fits) best_time = std::min(best_time, by_time(x));
  }
  std::tuple<std::int64_t, double> best_peak{std::numeric_limits<std::int64_t>::max(), 0};
  if (!any_fits) {
    for (const PartitionPlan& x : plans) best_peak = std::min(best_peak, by_peak(x));
    return {std::get<1>(best_peak), std::get<0>(best_peak)};
  }
  if (problem.balance == Balance::kTime) return {std::get<0>(best_time), std::get<1>(best_time)};
  double bound = (1.0 + problem.time_slack) * std::get<0>(best_time);
  if (auto uniform = uniform_plan(problem); uniform.ok() && problem.bound_at_least_uniform)
    bound = std::max(bound, uniform->iteration_s);
  for (const PartitionPlan& x : plans) {
    if (x.iteration_s <= bound) best_peak = std::min(best_peak, by_peak(x));
  }
  return {std::get<1>(best_peak), std::get<0>(best_peak)};
}

TEST(PartitionOptimizer, MatchesBruteForceOnRandomInstances) {
  std::mt19937 rng(20240611);
  int memory_runs = 0, time_runs = 0, infeasible_runs = 0, partial_runs = 0;
  for (int seed = 0; seed < 400; ++seed) {
    PartitionProblem problem = random_problem(rng, {7, 4, 6});
    problem.bound_at_least_uniform = seed % 2 == 1;  // --balance headroom
    problem.p2p_blocks = seed % 4 >= 2;              // stages held by their sends: the bounds still hold
    const auto [time_s, peak_bytes] = brute_force_optimum(problem);
    auto result = optimize_partition(problem);
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result->plan.iteration_s, time_s) << "instance " << seed;
    if (problem.balance == Balance::kMemory || !result->any_fits) {
      EXPECT_EQ(result->plan.peak_memory_bytes, peak_bytes) << "instance " << seed;
    } else {
      EXPECT_TRUE(result->plan.fits) << "instance " << seed;
    }
    EXPECT_TRUE(result->proven_optimal);
    // The plan the optimizer reports is the plan it chose, evaluated afresh.
    auto again = evaluate_plan(problem, result->plan.choice);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->iteration_s, result->plan.iteration_s);
    (problem.balance == Balance::kMemory ? memory_runs : time_runs) += 1;
    for (int k : result->plan.choice.partial_units) partial_runs += k > 0 ? 1 : 0;
    infeasible_runs += result->any_fits ? 0 : 1;
  }
  // The generator covers both objectives and both feasible and infeasible instances.
  EXPECT_GT(memory_runs, 100);
  EXPECT_GT(time_runs, 100);
  EXPECT_GT(infeasible_runs, 10);
  EXPECT_LT(infeasible_runs, 300);
  // Optima that recompute only some units of a stage (checked against every count by brute force).
  EXPECT_GT(partial_runs, 10);
}

// With any budget, however small, the answer is a plan with proven bounds, never an unproven
// claim: under kMemory T_fit lies between fastest_fitting_lower_s and fastest_fitting_s, the plan
// meets the time limit stated against the latter, which is the objective's own limit when
// time_limit_proven, and the least peak within that limit lies between peak_lower_bound_bytes and
// the plan's peak; under kTime the least time lies between iteration_lower_bound_s and the plan's
// time; a proven answer is the optimum.
TEST(PartitionOptimizer, ProvenBoundsHoldWhenTheBudgetRunsOut) {
  std::mt19937 rng(515);
  int cut_short = 0, limit_unproven = 0;
  for (int seed = 0; seed < 300; ++seed) {
    PartitionProblem problem = random_problem(rng, {7, 4, 6});
    problem.bound_at_least_uniform = seed % 2 == 1;
    problem.p2p_blocks = seed % 4 >= 2;
    const std::vector<PartitionPlan> plans = all_plans(problem);
    const std::int64_t node =
        2 * problem.stages * problem.micro_batches + static_cast<int>(problem.units.size());
    problem.max_search_work = std::uniform_int_distribution<std::int64_t>(0, 6)(rng) * node;
    auto result = optimize_partition(problem);
    ASSERT_TRUE(result.ok()) << result.error().message;
    const PartitionPlan& plan = result->plan;
    ASSERT_EQ(plan.stages.size(), static_cast<size_t>(problem.stages));
    cut_short += result->proven_optimal ? 0 : 1;
    const auto [time_s, peak_bytes] = brute_force_optimum(problem);
    if (!result->any_fits) {
      EXPECT_EQ(plan.peak_memory_bytes, peak_bytes) << "instance " << seed;  // a DP: always exact
      continue;
    }
    EXPECT_TRUE(plan.fits) << "instance " << seed;
    if (problem.balance == Balance::kTime) {
      EXPECT_LE(result->iteration_lower_bound_s, time_s) << "instance " << seed;
      EXPECT_GE(plan.iteration_s, time_s) << "instance " << seed;
      if (result->proven_optimal) {
        EXPECT_EQ(plan.iteration_s, time_s) << "instance " << seed;
      }
      continue;
    }
    double fastest_s = std::numeric_limits<double>::infinity();
    for (const PartitionPlan& x : plans) {
      if (x.fits) fastest_s = std::min(fastest_s, x.iteration_s);
    }
    EXPECT_LE(result->fastest_fitting_lower_s, fastest_s) << "instance " << seed;
    EXPECT_GE(result->fastest_fitting_s, fastest_s) << "instance " << seed;
    const double uniform_s =
        result->uniform && problem.bound_at_least_uniform ? result->uniform->iteration_s : 0.0;
    const double slack = 1.0 + problem.time_slack;
    const double limit_s = result->time_bound_s;
    EXPECT_EQ(limit_s, std::max(slack * result->fastest_fitting_s, uniform_s)) << "instance " << seed;
    if (result->time_limit_proven) {
      EXPECT_EQ(limit_s, std::max(slack * fastest_s, uniform_s)) << "instance " << seed;
    } else {
      ++limit_unproven;
      EXPECT_FALSE(result->proven_optimal);
      EXPECT_LT(result->fastest_fitting_lower_s, result->fastest_fitting_s) << "instance " << seed;
    }
    // The least peak within the stated limit.
    std::int64_t least_bytes = std::numeric_limits<std::int64_t>::max();
    for (const PartitionPlan& x : plans) {
      if (x.fits && x.iteration_s <= limit_s) least_bytes = std::min(least_bytes, x.peak_memory_bytes);
    }
    EXPECT_LE(plan.iteration_s, limit_s) << "instance " << seed;
    EXPECT_LE(result->peak_lower_bound_bytes, least_bytes) << "instance " << seed;
    EXPECT_GE(plan.peak_memory_bytes, least_bytes) << "instance " << seed;
    if (result->proven_optimal) {
      EXPECT_EQ(plan.peak_memory_bytes, peak_bytes) << "instance " << seed;
    }
  }
  EXPECT_GT(cut_short, 50);       // the budgets do cut searches short
  EXPECT_GT(limit_unproven, 10);  // and leave T_fit unproven
}

// The default memory balance costs at most the slack over the fastest split that fits, however
// slow the uniform split is (until 2026-11-27 its limit was the uniform split's time when that
// was larger: 12 % slower steps to save memory no one needed).
TEST(PartitionOptimizer, MemoryBalanceStaysWithinTheSlackOfTheFastestFittingSplit) {
  std::mt19937 rng(17);
  int slower_uniform = 0;
  for (int seed = 0; seed < 150; ++seed) {
    PartitionProblem problem = random_problem(rng, {24, 6, 16});
    problem.capacity_bytes = 1'000'000;  // everything fits
    problem.balance = Balance::kTime;
    auto fastest = optimize_partition(problem);
    problem.balance = Balance::kMemory;
    auto balanced = optimize_partition(problem);
    ASSERT_TRUE(fastest.ok() && balanced.ok());
    if (!fastest->proven_optimal || !balanced->time_limit_proven) continue;
    EXPECT_LE(balanced->plan.iteration_s, (1 + problem.time_slack) * fastest->plan.iteration_s * (1 + 1e-9))
        << "instance " << seed;
    if (balanced->uniform &&
        balanced->uniform->iteration_s > (1 + problem.time_slack) * fastest->plan.iteration_s)
      ++slower_uniform;
  }
  EXPECT_GT(slower_uniform, 20);  // instances where the old limit (the uniform split's time) was looser
}

// --balance headroom: the limit is at least the uniform split's time, so the peak is never above
// the uniform split's.
TEST(PartitionOptimizer, HeadroomPeakNeverAboveUniform) {
  std::mt19937 rng(7);
  for (int seed = 0; seed < 150; ++seed) {
    PartitionProblem problem = random_problem(rng, {24, 6, 16});
    problem.balance = Balance::kMemory;
    problem.bound_at_least_uniform = true;
    problem.capacity_bytes = 1'000'000;  // everything fits: the bound is defined
    auto result = optimize_partition(problem);
    ASSERT_TRUE(result.ok()) << result.error().message;
    ASSERT_TRUE(result->any_fits);
    EXPECT_LE(result->plan.iteration_s, result->time_bound_s) << "instance " << seed;
    if (!result->uniform) continue;
    EXPECT_LE(result->plan.peak_memory_bytes, result->uniform->peak_memory_bytes) << "instance " << seed;
    EXPECT_GE(result->time_bound_s, result->uniform->iteration_s);
  }
}

TEST(PartitionOptimizer, TimeBalanceNeverSlowerThanUniformThatFits) {
  std::mt19937 rng(11);
  for (int seed = 0; seed < 150; ++seed) {
    PartitionProblem problem = random_problem(rng, {24, 6, 16});
    problem.balance = Balance::kTime;
    auto result = optimize_partition(problem);
    ASSERT_TRUE(result.ok()) << result.error().message;
    if (!result->uniform || !result->uniform->fits) continue;
    EXPECT_TRUE(result->plan.fits);
    EXPECT_LE(result->plan.iteration_s, result->uniform->iteration_s) << "instance " << seed;
  }
}

}  // namespace
}  // namespace pipescope::planner
