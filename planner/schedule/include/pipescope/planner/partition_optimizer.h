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
//            max((1 + time_slack) * T_fit, T_uniform), T_fit the kTime optimum and T_uniform the
//            uniform_plan()'s time; ties: least time. Whenever some plan fits, the result fits.
// When no plan fits, both return the plan with the least peak memory (ties: least time), its
// overflowing stages flagged: a plan that does not fit is still the closest one to fitting.
// Times within a relative 1e-9 count as equal. Schedules: gpipe and 1f1b (under interleaving a
// stage's peak depends on which chunk activations overlap in time, which this does not model).
// Cost: usually milliseconds to a second at 128 units x 64 stages (benches/cpu/
// partition_benchmark.cpp); some problems need long searches, which max_search_nodes caps.
#pragma once

#include <cstdint>
#include <optional>

#include "pipescope/common/expected.h"
#include "pipescope/planner/partition_plan.h"

namespace pipescope::planner {

struct PartitionSearchStats {
  std::int64_t nodes = 0;        // partial plans the branch and bound opened
  std::int64_t simulations = 0;  // schedule simulations: one per node for its bound, one per plan
  std::int64_t plans_timed = 0;  // complete plans among them
};

struct PartitionResult {
  PartitionPlan plan;  // the optimum of the objective
  // uniform_plan(), for comparison; empty when the uniform split leaves a stage without a unit
  // (then kMemory's bound is (1 + time_slack) * T_fit alone).
  std::optional<PartitionPlan> uniform;
  bool any_fits = false;
  double fastest_fitting_s = 0;  // T_fit; 0 when nothing fits
  double time_bound_s = 0;       // kMemory's bound; 0 for kTime or when nothing fits
  bool proven_optimal = true;    // false only when max_search_nodes cut the search short
  PartitionSearchStats stats;
};

// Fails on an invalid problem (validate()), for the interleaved schedule, and when p > n.
Expected<PartitionResult> optimize_partition(const PartitionProblem& problem);

}  // namespace pipescope::planner
