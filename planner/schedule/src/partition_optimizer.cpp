// The two objectives, built from PartitionSearch's exact answers (see partition_search.cpp), and
// what the optimizer can still prove when its budget runs out.
#include "pipescope/planner/partition_optimizer.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "partition_bound.h"
#include "partition_costs.h"
#include "partition_local.h"
#include "partition_search.h"

namespace pipescope::planner {
namespace {

using detail::FoundPlan;
using detail::PartitionSearch;
using Outcome = detail::SearchBase::Outcome;

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
      for (int end = j + 2; ctx.partial.enabled() && end <= n - (p - s - 1); ++end) {
        bool any = false;
        for (int count = 1; count < end - j; ++count) {
          const std::int64_t bytes =
              ctx.partial.memory_bytes(j, end, count, ctx.extra_bytes[s], ctx.in_flight[s]);
          any = any || bytes <= high;
          if (bytes > low && bytes <= high) values.push_back(bytes);
        }
        // Every count keeps at least the units' static memory, which only grows with the stage.
        if (!any && ctx.extra_bytes[s] + ctx.partial.static_prefix[end] - ctx.partial.static_prefix[j] > high)
          break;
      }
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Lower bounds from critical paths (partition_bound.h), paid for from the search's budget.
class PathBounds {
 public:
  PathBounds(const PartitionProblem& problem, const detail::PartitionContext& ctx, PartitionSearch& search)
      : problem_(problem), bound_(problem, ctx), search_(search) {}
  void add(const FoundPlan& plan) {
    forward_s_.assign(static_cast<size_t>(problem_.stages), 0.0);
    backward_s_.assign(static_cast<size_t>(problem_.stages), 0.0);
    for (int s = 0; s < problem_.stages; ++s) {
      const int first = plan.choice.boundaries[s], end = plan.choice.boundaries[s + 1];
      const int partial = plan.choice.partial_units.empty() ? 0 : plan.choice.partial_units[s];
      const int r = plan.choice.options[s];
      const detail::StageSums sums =
          partial > 0 ? detail::partial_sums(problem_, first, end, partial, r, problem_.partial_base)
                      : detail::partial_sums(problem_, first, end, end - first, r, r);
      forward_s_[s] = sums.forward_s;
      backward_s_[s] = sums.backward_s;
    }
    bound_.add_path(forward_s_, backward_s_);
  }
  // A lower bound on the time of every plan within limit_bytes (0 once the budget is spent).
  double at(std::int64_t limit_bytes, int rounds) {
    if (search_.out_of_budget()) return 0;
    std::int64_t used = 0;
    const double lower_s = bound_.lower_bound(limit_bytes, rounds, &used);
    search_.charge(used);
    // The combination that gave it bounds partial plans inside the search too.
    if (!bound_.best_weights().empty()) search_.use_path_weights(bound_.weight_sets(detail::kMostWeightSets));
    return lower_s;
  }

 private:
  const PartitionProblem& problem_;
  detail::PathBound bound_;
  PartitionSearch& search_;
  std::vector<double> forward_s_, backward_s_;
};

// Rounds of the critical-path bound's cutting-plane loop: at the capacity (where it bounds T_fit),
// and at each peak probed (starting from the paths found before).
constexpr int kFitRounds = 40;
constexpr int kProbeRounds = 24;

struct LeastPeak {
  FoundPlan plan;                      // within the time limit
  std::int64_t lower_bound_bytes = 0;  // no plan within the limit peaks lower
};

// The least peak P such that some plan within P per stage takes at most limit_s; `known` does
// with peak values.back(), and values.front() is the least peak of any plan. The predicate grows
// with P, so bisect over the candidate values; a yes moves the top down to the peak of the plan
// found, which is often well below the probe; a proven no moves the lower bound up.
LeastPeak least_peak_within(PartitionSearch& search, PathBounds& paths,
                            const std::vector<std::int64_t>& values, double limit_s, const FoundPlan& known) {
  LeastPeak out{known, values.front()};
  size_t low = 0, high = values.size() - 1;
  size_t unknown = high;  // the lowest probe that neither found a plan nor proved there is none
  // A probe may spend an eighth of what is left: one that cannot finish counts as a no for the
  // bisection but proves nothing, rather than stopping it.
  const auto cap = [&] { return std::max(search.work_left() / 8, 4096 * search.node_work()); };
  // A probe settled by the critical-path bound: no search needed.
  const auto by_paths = [&](size_t i) { return paths.at(values[i], kProbeRounds) > limit_s; };
  // A quarter of the budget stays for the proofs below.
  const std::int64_t reserve = search.work_left() / 4;
  while (low < high && search.work_left() > reserve) {
    const size_t mid = low + (high - low) / 2;
    const Outcome probe = search.exists(values[mid], limit_s, cap());
    if (probe.found) {
      out.plan = probe.plan;
      high = static_cast<size_t>(std::lower_bound(values.begin(), values.end(), probe.plan.peak_bytes) -
                                 values.begin());
      continue;
    }
    if (probe.finished || by_paths(mid)) {
      out.lower_bound_bytes = std::max(out.lower_bound_bytes, values[mid + 1]);
    } else {
      unknown = std::min(unknown, mid);
    }
    low = mid + 1;
  }
  // The bisection above moves up past probes it could not settle. Below the lowest of them,
  // bisect again for the largest peak proven to admit no plan: it bounds the optimum.
  low = static_cast<size_t>(std::lower_bound(values.begin(), values.end(), out.lower_bound_bytes) -
                            values.begin());
  high = std::min(unknown, high);
  while (low < high && !search.out_of_budget()) {
    const size_t mid = low + (high - low) / 2;
    if (by_paths(mid)) {
      out.lower_bound_bytes = std::max(out.lower_bound_bytes, values[mid + 1]);
      low = mid + 1;
      continue;
    }
    const Outcome probe = search.exists(values[mid], limit_s, cap());
    if (probe.found && probe.plan.peak_bytes < out.plan.peak_bytes) out.plan = probe.plan;
    if (!probe.found && probe.finished) {
      out.lower_bound_bytes = std::max(out.lower_bound_bytes, values[mid + 1]);
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return out;
}

double relative_gap(double value, double bound) {
  if (value <= bound) return 0;
  return bound > 0 ? value / bound - 1 : std::numeric_limits<double>::infinity();
}

FoundPlan as_found(const PartitionPlan& plan) {
  return FoundPlan{plan.choice, plan.iteration_s, plan.peak_memory_bytes};
}

}  // namespace

Expected<PartitionResult> optimize_partition(const PartitionProblem& problem) {
  auto ctx = detail::PartitionContext::build(problem);
  if (!ctx.ok()) return ctx.error();
  PartitionResult result;
  if (auto uniform = uniform_plan(problem); uniform.ok()) result.uniform = std::move(*uniform);
  const bool uniform_fits = result.uniform && result.uniform->fits;

  PartitionSearch search(problem, *ctx);
  // The pivot paths bound every search from the start (pivot_bound.h) when the pipeline is not
  // long past its warm-up: with m > 4p every pivot path weighs its pivot within p/m of m, as
  // the single-stage walk does already, and the fronts cost more than they cut (measured:
  // llama2-70b at pp 4 with 32 micro-batches, the same proven plan in 3.5 ms without them, 16 ms
  // with them).
  const bool use_pivots = problem.micro_batches <= 4 * problem.stages;
  const detail::PivotFamilies pivots =
      use_pivots ? detail::PivotFamilies::find(problem, *ctx) : detail::PivotFamilies{};
  if (use_pivots) search.use_pivot_families(&pivots);
  // Exact, by a DP: whether anything fits, and a plan with the least peak.
  const FoundPlan least = search.least_peak_plan();
  result.any_fits = least.peak_bytes <= problem.capacity_bytes;
  PathBounds paths(problem, *ctx, search);
  detail::LocalSearch local(problem, *ctx);
  paths.add(least);
  if (result.uniform) paths.add(as_found(*result.uniform));
  FoundPlan chosen;
  if (!result.any_fits) {
    // The least peak is the objective and is exact; the fastest plan with it breaks ties.
    search.grant(problem.max_search_work);
    search.charge(pivots.work);
    const Outcome tie = search.fastest(least.peak_bytes, &least);
    chosen = tie.plan;
    result.peak_lower_bound_bytes = least.peak_bytes;
  } else {
    // A fitting plan to start from: the faster of the uniform one (when it fits) and `least`,
    // made faster by local moves, cheaply: under kMemory it may settle the time limit at once.
    search.grant(problem.max_search_work / 16);
    search.charge(pivots.work);
    std::int64_t used = 0;
    const FoundPlan seed = local.faster(
        uniform_fits && result.uniform->iteration_s <= least.iteration_s ? as_found(*result.uniform) : least,
        problem.capacity_bytes, search.work_left(), &used);
    search.charge(used);
    if (problem.balance == Balance::kTime) {
      search.grant(problem.max_search_work - problem.max_search_work / 16);
      const Outcome fit = search.fastest(problem.capacity_bytes, &seed);
      chosen = fit.plan;
      result.fastest_fitting_s = fit.plan.iteration_s;
      result.fastest_fitting_lower_s = fit.plan.iteration_s;
      if (!fit.finished) {
        paths.add(fit.plan);
        search.grant(problem.max_search_work / 8);  // the bound's own share, past the search's
        result.fastest_fitting_lower_s = std::min(
            fit.plan.iteration_s, std::max(fit.lower_bound_s, paths.at(problem.capacity_bytes, kFitRounds)));
      }
      result.iteration_lower_bound_s = result.fastest_fitting_lower_s;
    } else {
      // Half the budget for the time limit, the rest (with what that left) for the peak, so that
      // a search cut short in the first still balances memory in the second.
      search.grant(problem.max_search_work / 2 - problem.max_search_work / 16);
      const double slack = 1.0 + problem.time_slack;
      // The uniform split's time as a floor under the limit (--balance headroom), or none.
      const double uniform_s =
          problem.bound_at_least_uniform && result.uniform ? result.uniform->iteration_s : 0.0;
      const bool uniform_floor = uniform_fits && uniform_s > 0;
      FoundPlan fastest = seed;
      double limit_s = 0;
      bool decided = false;
      double fit_low_s = 0;  // proven: T_fit >= this
      // If some fitting plan is `slack` times faster than the uniform one, the floor is the limit
      // whatever T_fit is: a decision, far cheaper than finding T_fit. The local moves may have
      // met one; else a short search settles easy problems; otherwise the critical-path bound may
      // show there is no such plan, and the search for T_fit below settles the rest.
      if (uniform_floor && seed.iteration_s <= uniform_s / slack) {
        limit_s = uniform_s;
        decided = true;
      } else if (uniform_floor) {
        const Outcome quick =
            search.exists(problem.capacity_bytes, uniform_s / slack, search.work_left() / 16);
        if (quick.found) {
          limit_s = uniform_s;
          fastest = quick.plan;
          decided = true;
        } else if (quick.finished) {
          fit_low_s = uniform_s / slack;
        } else {
          fit_low_s = std::min(paths.at(problem.capacity_bytes, kFitRounds), uniform_s);
        }
      }
      if (!decided) {
        const Outcome fit = search.fastest(problem.capacity_bytes, &seed);
        fastest = fit.plan;
        fit_low_s = std::max(fit_low_s, fit.finished ? fit.plan.iteration_s : fit.lower_bound_s);
        if (!fit.finished) {
          paths.add(fit.plan);
          fit_low_s = std::max(fit_low_s, paths.at(problem.capacity_bytes, kFitRounds));
        }
        fit_low_s = std::min(fit_low_s, fit.plan.iteration_s);
        // With T_fit not proven, the limit is stated against the fastest plan found: holding
        // plans to the lower bound instead would spend the slack on the bound's own gap.
        limit_s = std::max(slack * fit.plan.iteration_s, uniform_s);
        // The search met a plan that much faster (the limit is then the uniform plan's time), or
        // proved its fastest plan is the fastest.
        decided =
            (uniform_floor && fit.plan.iteration_s <= uniform_s / slack) || fit_low_s == fit.plan.iteration_s;
      }
      result.fastest_fitting_s = fastest.iteration_s;
      result.fastest_fitting_lower_s = fit_low_s;
      result.time_bound_s = limit_s;
      result.time_limit_proven = decided;
      search.grant(problem.max_search_work - problem.max_search_work / 2);
      // A plan within the limit: the uniform one when it is, or the fastest found when its peak is
      // lower.
      FoundPlan known =
          uniform_fits && result.uniform->iteration_s <= limit_s ? as_found(*result.uniform) : fastest;
      if (fastest.iteration_s <= limit_s && fastest.peak_bytes < known.peak_bytes) known = fastest;
      // Plans with lower peaks near the known one, cheaply: the bisection then starts lower.
      known = local.lower_peak(known, limit_s, std::max<std::int64_t>(search.work_left() / 4, 0), &used);
      search.charge(used);
      const LeastPeak best = least_peak_within(
          search, paths, candidate_peaks(problem, *ctx, least.peak_bytes, known.peak_bytes), limit_s, known);
      // The fastest plan within that peak; `best.plan` is one, within the limit.
      chosen = search.fastest(best.plan.peak_bytes, &best.plan).plan;
      result.peak_lower_bound_bytes = best.lower_bound_bytes;
    }
  }

  auto plan = evaluate_plan(problem, chosen.choice);
  if (!plan.ok()) return plan.error();
  result.plan = std::move(*plan);
  if (problem.balance == Balance::kTime && result.any_fits) {
    result.optimality_gap = relative_gap(result.plan.iteration_s, result.iteration_lower_bound_s);
  } else {
    result.optimality_gap = relative_gap(static_cast<double>(result.plan.peak_memory_bytes),
                                         static_cast<double>(result.peak_lower_bound_bytes));
  }
  result.proven_optimal = result.optimality_gap == 0 && result.time_limit_proven;
  result.stats = search.stats();
  return result;
}

}  // namespace pipescope::planner
