// The two objectives, built from PartitionSearch's exact answers (see partition_search.cpp).
#include "pipescope/planner/partition_optimizer.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "partition_costs.h"
#include "partition_search.h"

namespace pipescope::planner {
namespace {

using detail::FoundPlan;
using detail::PartitionSearch;

// Nothing fits: the plan closest to fitting, i.e. the least peak, and the fastest of those.
// Some plan has exactly the least peak, so only a truncated search can come back empty.
bool closest_to_fitting(PartitionSearch& search, FoundPlan& plan) {
  return search.fastest(search.least_peak_bytes(), plan);
}

// Every distinct stage memory value in [low, high], ascending: a plan's peak is one of them.
std::vector<std::int64_t> candidate_peaks(const PartitionProblem& problem,
                                          const detail::PartitionContext& ctx, std::int64_t low,
                                          std::int64_t high) {
  const int n = static_cast<int>(problem.units.size());
  const int p = problem.stages;
  std::vector<std::int64_t> values{low, high};
  for (int s = 0; s < p; ++s) {
    for (int j = s; j <= n - (p - s); ++j) {
      for (int r : ctx.options) {
        detail::StageSums sums;
        for (int end = j + 1; end <= n - (p - s - 1); ++end) {
          sums.add(problem.units[end - 1], r);
          const std::int64_t bytes = sums.memory_bytes(ctx.extra_bytes[s], ctx.in_flight[s]);
          if (bytes > high) break;
          if (bytes > low) values.push_back(bytes);
        }
      }
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// kMemory: the plan with the least peak P such that some plan within P per stage meets
// bound_s; `known` meets it with peak values.back(). The predicate grows with P, so bisect over
// the candidate values; a yes moves the top down to the peak of the plan found, which is often
// well below the probe.
FoundPlan least_peak_within(PartitionSearch& search, const std::vector<std::int64_t>& values, double bound_s,
                            const FoundPlan& known) {
  FoundPlan best = known;
  size_t low = 0, high = values.size() - 1;
  while (low < high && !search.out_of_budget()) {
    const size_t mid = low + (high - low) / 2;
    FoundPlan plan;
    // A probe may spend an eighth of what is left: one that cannot finish counts as a no (and
    // the answer as unproven) rather than stopping the bisection.
    if (search.exists(values[mid], bound_s, plan, std::max<std::int64_t>(search.nodes_left() / 8, 4096))) {
      best = plan;
      high = static_cast<size_t>(std::lower_bound(values.begin(), values.end(), plan.peak_bytes) -
                                 values.begin());
    } else {
      low = mid + 1;
    }
  }
  return best;
}

}  // namespace

Expected<PartitionResult> optimize_partition(const PartitionProblem& problem) {
  auto ctx = detail::PartitionContext::build(problem);
  if (!ctx.ok()) return ctx.error();
  PartitionResult result;
  if (auto uniform = uniform_plan(problem); uniform.ok()) result.uniform = std::move(*uniform);

  PartitionSearch search(problem, *ctx);
  // Half the budget for the fastest plan; the rest, with what that left, for what follows, so
  // that a search cut short in the first still balances memory in the second.
  search.grant(problem.max_search_nodes / 2);
  // The uniform plan, when it fits, is a first incumbent: the search only looks for faster ones.
  std::optional<FoundPlan> uniform;
  if (result.uniform) {
    uniform =
        FoundPlan{result.uniform->choice, result.uniform->iteration_s, result.uniform->peak_memory_bytes};
  }
  const bool uniform_fits = result.uniform && result.uniform->fits;
  FoundPlan fastest;
  result.any_fits = search.fastest(problem.capacity_bytes, fastest, uniform_fits ? &*uniform : nullptr);
  FoundPlan chosen = fastest;
  search.grant(problem.max_search_nodes - problem.max_search_nodes / 2);
  if (!result.any_fits) {
    if (!closest_to_fitting(search, chosen)) {
      return Error{"the partition search stopped before finding any plan; raise max_search_nodes"};
    }
  } else if (problem.balance == Balance::kMemory) {
    result.fastest_fitting_s = fastest.iteration_s;
    result.time_bound_s = (1.0 + problem.time_slack) * fastest.iteration_s;
    // Both the fastest fitting plan and the uniform one meet the bound, so the least peak lies
    // between the least peak of any plan and the smaller of their peaks.
    FoundPlan known = fastest;
    if (uniform) {
      result.time_bound_s = std::max(result.time_bound_s, uniform->iteration_s);
      if (uniform->peak_bytes < known.peak_bytes) known = *uniform;
    }
    const std::int64_t low = std::min(search.least_peak_bytes(), known.peak_bytes);
    const FoundPlan least = least_peak_within(search, candidate_peaks(problem, *ctx, low, known.peak_bytes),
                                              result.time_bound_s, known);
    // The fastest plan within that peak; `least` is one, within the bound.
    if (!search.fastest(least.peak_bytes, chosen, &least)) chosen = least;
  } else {
    result.fastest_fitting_s = fastest.iteration_s;
  }

  auto plan = evaluate_plan(problem, chosen.choice);
  if (!plan.ok()) return plan.error();
  result.plan = std::move(*plan);
  result.proven_optimal = !search.truncated();
  result.stats = search.stats();
  return result;
}

}  // namespace pipescope::planner
