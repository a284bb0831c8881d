// The partition optimizer: an exact search over contiguous splits and per-stage recompute
// options, where a plan's iteration time is the simulated time of its schedule (exact for
// stages of unequal cost), not a closed-form estimate. The argument for exactness is at the top
// of src/partition_search.cpp.
//
// Objectives (PartitionProblem::balance):
//   kTime    the least iteration time over plans whose every stage fits (among equally fast
//            plans, whichever the search meets first; proving the least peak among them costs
//            several times the search itself).
//   kMemory  the least peak stage memory over plans whose iteration time stays within
//            (1 + time_slack) * T_fit, T_fit the kTime optimum; with bound_at_least_uniform,
//            within max((1 + time_slack) * T_fit, T_uniform), T_uniform the uniform_plan()'s
//            time. Ties: least time. Whenever some plan fits, the result fits.
// When no plan fits, both return the plan with the least peak memory (ties: least time), its
// overflowing stages flagged: a plan that does not fit is still the closest one to fitting.
// Times within a relative 1e-9 count as equal. Schedules: gpipe and 1f1b (under interleaving a
// stage's peak depends on which chunk activations overlap in time, which this does not model).
//
// Budget. The search stops after max_search_work; the answer is then the best plan found with a
// proven bound on the optimum, never an unproven claim: under kMemory, when T_fit is not proven,
// the time limit is stated against the fastest fitting plan found (fastest_fitting_s, with its
// proven lower bound), the plan meets that limit and peak_lower_bound_bytes bounds the least peak
// any plan within it can have; under kTime iteration_lower_bound_s bounds the least time.
// Cost: milliseconds to seconds (benches/cpu/partition_benchmark.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "pipescope/common/expected.h"
#include "pipescope/planner/partition_plan.h"

namespace pipescope::planner {

struct PartitionSearchStats {
  std::int64_t nodes = 0;        // partial plans the branch and bound opened
  std::int64_t work = 0;         // schedule operations timed (the budget's unit)
  std::int64_t simulations = 0;  // schedule simulations: one per node for its bound, one per plan
  std::int64_t plans_timed = 0;  // complete plans among them
};

struct PartitionResult {
  PartitionPlan plan;  // the optimum of the objective, or the best plan the budget allowed
  // uniform_plan(), for comparison; empty when the uniform split leaves a stage without a unit
  // (then kMemory's bound is (1 + time_slack) * T_fit alone, whatever bound_at_least_uniform).
  std::optional<PartitionPlan> uniform;
  bool any_fits = false;  // exact: the least peak over all plans is within the capacity
  // T_fit: the fastest fitting plan the search met, and a proven lower bound on T_fit (equal when
  // proven). Under kMemory with bound_at_least_uniform the search only learns T_fit as far as the
  // bound needs it: when some plan is (1 + slack) times faster than the uniform one the bound is
  // T_uniform, and these two may be apart. 0 when nothing fits.
  double fastest_fitting_s = 0;
  double fastest_fitting_lower_s = 0;
  // kMemory: the time limit the plan was held to, (1 + slack) * fastest_fitting_s; with
  // bound_at_least_uniform, max((1 + slack) * fastest_fitting_s, T_uniform), or T_uniform alone
  // when some plan is (1 + slack) times faster than the uniform one. It is the
  // objective's limit when time_limit_proven; otherwise T_fit may be below fastest_fitting_s and
  // the objective's limit with it. 0 for kTime or when nothing fits.
  double time_bound_s = 0;
  bool time_limit_proven = true;
  // Proven bounds on the optimum of the objective: the least peak (kMemory, or when nothing fits)
  // and the least time (kTime). Equal to the plan's own value when proven.
  std::int64_t peak_lower_bound_bytes = 0;
  double iteration_lower_bound_s = 0;
  // (plan's value - bound) / bound for the objective: 0 when proven.
  double optimality_gap = 0;
  bool proven_optimal = true;  // optimality_gap == 0 and time_limit_proven
  PartitionSearchStats stats;
};

// Fails on an invalid problem (validate()), for the interleaved schedule, and when p > n.
Expected<PartitionResult> optimize_partition(const PartitionProblem& problem);

}  // namespace pipescope::planner
