// Each search direction alone against brute force. The optimizer runs them as a portfolio and
// returns whichever finishes first, so its own tests may exercise only one; here both must be
// exact on their own, for the fastest plan under a memory limit and for a time cut-off, with and
// without the critical-path bound in their nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "partition_bound.h"
#include "partition_local.h"
#include "partition_search.h"
#include "partition_test_support.h"

namespace pipescope::planner::detail {
namespace {

constexpr std::int64_t kBudget = 100'000'000;

// The least time over plans whose peak is within the limit; infinity when none is.
double brute_force_fastest(const std::vector<PartitionPlan>& plans, std::int64_t limit_bytes) {
  double best = std::numeric_limits<double>::infinity();
  for (const PartitionPlan& plan : plans) {
    if (plan.peak_memory_bytes <= limit_bytes) best = std::min(best, plan.iteration_s);
  }
  return best;
}

// Which bounds the nodes carry besides their own: none, critical paths found at each limit or at
// the largest, or those at each limit and the pivot paths (pivot_bound.h).
enum class NodePaths { kNone, kAtTheLimit, kAtTheLargestLimit, kAtTheLimitWithPivots };

template <class Direction>
void check_direction(std::uint32_t seed, NodePaths paths) {
  std::mt19937 rng(seed);
  for (int instance = 0; instance < 300; ++instance) {
    const PartitionProblem problem = test::random_problem(rng, {7, 4, 6});
    auto ctx = PartitionContext::build(problem);
    ASSERT_TRUE(ctx.ok()) << ctx.error().message;
    const std::vector<PartitionPlan> plans = test::all_plans(problem);
    Direction search(problem, *ctx);
    PathBound bound(problem, *ctx);
    bound.add_path(std::vector<double>(problem.stages, 1.0), std::vector<double>(problem.stages, 2.0));
    const PivotFamilies pivots = PivotFamilies::find(problem, *ctx);
    if (paths == NodePaths::kAtTheLimitWithPivots) search.use_pivot_families(&pivots);
    if (paths == NodePaths::kAtTheLargestLimit) {
      bound.lower_bound(plans.back().peak_memory_bytes, 20, nullptr);
      search.use_path_weights(bound.weight_sets(kMostWeightSets));
    }
    // Limits from "nothing fits" to "everything fits", each a peak some plan has.
    for (const PartitionPlan& probe : {plans.front(), plans[plans.size() / 2], plans.back()}) {
      const std::int64_t limit = probe.peak_memory_bytes;
      if (paths == NodePaths::kAtTheLimit || paths == NodePaths::kAtTheLimitWithPivots) {
        bound.lower_bound(limit, 20, nullptr);
        search.use_path_weights(bound.weight_sets(kMostWeightSets));
      }
      const double expected = brute_force_fastest(plans, limit);
      const SearchBase::Outcome fastest =
          search.search(limit, std::numeric_limits<double>::infinity(), kBudget);
      ASSERT_TRUE(fastest.finished);
      ASSERT_TRUE(fastest.found) << "instance " << instance;  // probe itself is within the limit
      EXPECT_EQ(fastest.plan.iteration_s, expected) << "instance " << instance;
      EXPECT_LE(fastest.plan.peak_bytes, limit);
      // A cut-off just below the optimum has no plan; at the optimum, one.
      const SearchBase::Outcome below = search.search(limit, expected - 0.5, kBudget);
      EXPECT_TRUE(below.finished);
      EXPECT_FALSE(below.found) << "instance " << instance;
      const SearchBase::Outcome at = search.search(limit, expected, kBudget);
      EXPECT_TRUE(at.found) << "instance " << instance;
      EXPECT_LE(at.plan.iteration_s, expected);
    }
  }
}

TEST(ForwardSearch, MatchesBruteForceOnRandomInstances) {
  check_direction<ForwardSearch>(101, NodePaths::kNone);
}

TEST(ForwardSearch, MatchesBruteForceWithCriticalPathsInItsNodes) {
  check_direction<ForwardSearch>(102, NodePaths::kAtTheLimit);
  check_direction<ForwardSearch>(103, NodePaths::kAtTheLargestLimit);
}

TEST(ForwardSearch, MatchesBruteForceWithPivotPathsInItsNodes) {
  check_direction<ForwardSearch>(105, NodePaths::kAtTheLimitWithPivots);
}

TEST(ReverseSearch, MatchesBruteForceWithPivotPathsInItsNodes) {
  check_direction<ReverseSearch>(205, NodePaths::kAtTheLimitWithPivots);
}

TEST(ReverseSearch, MatchesBruteForceOnRandomInstances) {
  check_direction<ReverseSearch>(202, NodePaths::kNone);
}

TEST(ReverseSearch, MatchesBruteForceWithCriticalPathsInItsNodes) {
  check_direction<ReverseSearch>(203, NodePaths::kAtTheLimit);
  check_direction<ReverseSearch>(204, NodePaths::kAtTheLargestLimit);
}

TEST(ReverseSearch, LeastPeakMatchesBruteForce) {
  std::mt19937 rng(303);
  for (int instance = 0; instance < 200; ++instance) {
    const PartitionProblem problem = test::random_problem(rng, {7, 4, 6});
    auto ctx = PartitionContext::build(problem);
    ASSERT_TRUE(ctx.ok());
    std::int64_t expected = std::numeric_limits<std::int64_t>::max();
    for (const PartitionPlan& plan : test::all_plans(problem))
      expected = std::min(expected, plan.peak_memory_bytes);
    ReverseSearch search(problem, *ctx);
    EXPECT_EQ(search.least_peak_bytes(), expected) << "instance " << instance;
  }
}

// A random instance's uniform plan as a local search's start; none when there is no uniform
// split, or (fitting) when it does not fit.
std::optional<FoundPlan> uniform_start(const PartitionProblem& problem, bool fitting) {
  auto uniform = uniform_plan(problem);
  if (!uniform.ok() || (fitting && !uniform->fits)) return std::nullopt;
  return FoundPlan{uniform->choice, uniform->iteration_s, uniform->peak_memory_bytes};
}

// What a local search reports is what the plan is.
void expect_as_evaluated(const PartitionProblem& problem, const FoundPlan& plan) {
  auto again = evaluate_plan(problem, plan.choice);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->peak_memory_bytes, plan.peak_bytes);
  EXPECT_EQ(again->iteration_s, plan.iteration_s);
  EXPECT_EQ(again->fits, plan.peak_bytes <= problem.capacity_bytes);
}

TEST(LocalSearch, OnlyEverReturnsLowerPeaksWithinTheLimit) {
  std::mt19937 rng(606);
  int improved = 0;
  for (int instance = 0; instance < 300; ++instance) {
    const PartitionProblem problem = test::random_problem(rng, {12, 5, 8});
    auto ctx = PartitionContext::build(problem);
    ASSERT_TRUE(ctx.ok());
    const std::optional<FoundPlan> from = uniform_start(problem, false);
    if (!from) continue;
    const FoundPlan& start = *from;
    const double limit_s = start.iteration_s * 1.1;
    LocalSearch local(problem, *ctx);
    std::int64_t used = 0;
    const FoundPlan plan = local.lower_peak(start, limit_s, 1'000'000, &used);
    EXPECT_LE(plan.peak_bytes, start.peak_bytes) << "instance " << instance;
    EXPECT_LE(plan.iteration_s, std::max(limit_s, start.iteration_s)) << "instance " << instance;
    expect_as_evaluated(problem, plan);
    improved += plan.peak_bytes < start.peak_bytes ? 1 : 0;
  }
  EXPECT_GT(improved, 30);
}

TEST(LocalSearch, OnlyEverReturnsFasterPlansWithinTheMemoryLimit) {
  std::mt19937 rng(607);
  int improved = 0;
  for (int instance = 0; instance < 300; ++instance) {
    const PartitionProblem problem = test::random_problem(rng, {12, 5, 8});
    auto ctx = PartitionContext::build(problem);
    ASSERT_TRUE(ctx.ok());
    const std::optional<FoundPlan> from = uniform_start(problem, true);
    if (!from) continue;
    const FoundPlan& start = *from;
    LocalSearch local(problem, *ctx);
    std::int64_t used = 0;
    const FoundPlan plan = local.faster(start, problem.capacity_bytes, 1'000'000, &used);
    EXPECT_LE(plan.iteration_s, start.iteration_s) << "instance " << instance;
    EXPECT_LE(plan.peak_bytes, problem.capacity_bytes) << "instance " << instance;
    EXPECT_LE(used, 1'000'000 + 6 * (2 * problem.stages * problem.micro_batches + 2 * 12))
        << "instance " << instance;
    expect_as_evaluated(problem, plan);
    improved += plan.iteration_s < start.iteration_s ? 1 : 0;
  }
  EXPECT_GT(improved, 30);
}

TEST(PartitionSearch, BudgetTooSmallReportsUnfinished) {
  std::mt19937 rng(404);
  PartitionProblem problem = test::random_problem(rng, {7, 4, 6});
  while (problem.stages < 3) problem = test::random_problem(rng, {7, 4, 6});
  auto ctx = PartitionContext::build(problem);
  ASSERT_TRUE(ctx.ok());
  ReverseSearch search(problem, *ctx);
  const SearchBase::Outcome outcome =
      search.search(std::numeric_limits<std::int64_t>::max(), std::numeric_limits<double>::infinity(), 2);
  EXPECT_FALSE(outcome.finished);
}

// Proving that no plan beats the optimum by half a second finds no plan, so the incumbent never
// changes and a search opens exactly the nodes whose bounds stay under the cut-off: with the
// critical-path bound in them (never lower than without) it can only open fewer, and with the
// single paths beside the combination (path_tables.h: a node takes the largest) fewer again.
template <class Direction>
void check_cuts(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::int64_t nodes_without = 0, nodes_combined = 0, nodes_all = 0;
  int fewer = 0, fewer_with_singles = 0;
  for (int instance = 0; instance < 100; ++instance) {
    const PartitionProblem problem = test::random_problem(rng, {12, 6, 8});
    auto ctx = PartitionContext::build(problem);
    ASSERT_TRUE(ctx.ok());
    const std::int64_t limit = problem.capacity_bytes;
    Direction plain(problem, *ctx), combined(problem, *ctx), all(problem, *ctx);
    const SearchBase::Outcome best = plain.search(limit, std::numeric_limits<double>::infinity(), kBudget);
    if (!best.found) continue;
    PathBound bound(problem, *ctx);
    bound.add_path(std::vector<double>(problem.stages, 1.0), std::vector<double>(problem.stages, 2.0));
    bound.lower_bound(limit, 20, nullptr);
    combined.use_path_weights({bound.best_weights()});
    all.use_path_weights(bound.weight_sets(kMostWeightSets));
    const std::int64_t before = plain.stats().nodes;
    const double cutoff_s = best.plan.iteration_s - 0.5;
    const SearchBase::Outcome without = plain.search(limit, cutoff_s, kBudget);
    const SearchBase::Outcome with_combination = combined.search(limit, cutoff_s, kBudget);
    const SearchBase::Outcome with_all = all.search(limit, cutoff_s, kBudget);
    ASSERT_TRUE(without.finished && with_combination.finished && with_all.finished);
    EXPECT_FALSE(without.found || with_combination.found || with_all.found) << "instance " << instance;
    const std::int64_t opened_without = plain.stats().nodes - before;
    const std::int64_t opened_combined = combined.stats().nodes, opened_all = all.stats().nodes;
    EXPECT_LE(opened_combined, opened_without) << "instance " << instance;
    EXPECT_LE(opened_all, opened_combined) << "instance " << instance;
    nodes_without += opened_without;
    nodes_combined += opened_combined;
    nodes_all += opened_all;
    fewer += opened_combined < opened_without ? 1 : 0;
    fewer_with_singles += opened_all < opened_combined ? 1 : 0;
  }
  EXPECT_GE(fewer, 5);
  EXPECT_LT(nodes_combined, nodes_without * 9 / 10);
  EXPECT_GE(fewer_with_singles, 5);
  std::cout << "nodes opened: " << nodes_without << " without, " << nodes_combined
            << " with the combination, " << nodes_all << " with the single paths too\n";
}

TEST(ForwardSearch, CriticalPathsInItsNodesCutProofs) { check_cuts<ForwardSearch>(505); }

TEST(ReverseSearch, CriticalPathsInItsNodesCutProofs) { check_cuts<ReverseSearch>(506); }

}  // namespace
}  // namespace pipescope::planner::detail
