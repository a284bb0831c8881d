// Local searches over splits: they only supply plans (upper bounds) to the exact search, which
// alone proves anything. Moving one stage boundary by one unit, or carrying one unit through the
// pipeline, and giving every stage the fastest option within a memory limit reaches, in
// milliseconds, plans the depth-first search meets only after many nodes: lower peaks within a
// tight time limit, and faster plans within the capacity (which set the time limit itself).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "partition_costs.h"
#include "partition_search.h"

namespace pipescope::planner::detail {

class LocalSearch {
 public:
  LocalSearch(const PartitionProblem& problem, const PartitionContext& ctx);

  // From `start` (within limit_s), moves while some lowers the peak and stays within limit_s,
  // spending at most max_work schedule operations. Returns the best plan (start when nothing was
  // better); *work_used says what it spent.
  FoundPlan lower_peak(const FoundPlan& start, double limit_s, std::int64_t max_work,
                       std::int64_t* work_used);
  // From `start` (every stage within limit_bytes), moves while some makes the plan faster with
  // every stage within limit_bytes; the same budget and result.
  FoundPlan faster(const FoundPlan& start, std::int64_t limit_bytes, std::int64_t max_work,
                   std::int64_t* work_used);

 private:
  // Stage s on [first, end): the fastest option (and partial count) within limit_bytes; false if
  // none is.
  bool fastest_within(int s, int first, int end, std::int64_t limit_bytes, int& option, int& partial,
                      StageSums& sums) const;
  // The plan on `boundaries` with every stage the fastest it can be below limit_bytes, timed;
  // false when a stage cannot stay below it.
  bool evaluate(const std::vector<int>& boundaries, std::int64_t limit_bytes, FoundPlan& out);
  // Rounds of moves from `start`: each round evaluates every neighbour of the best plan so far
  // within the limit that `limit_of(best)` gives, and keeps the one `better` prefers, until a
  // round keeps none or the work runs out.
  FoundPlan descend(const FoundPlan& start, const std::function<std::int64_t(const FoundPlan&)>& limit_of,
                    const std::function<bool(const FoundPlan&, const FoundPlan&)>& better,
                    std::int64_t max_work, std::int64_t* work_used);

  const PartitionProblem& problem_;
  const PartitionContext& ctx_;
  int p_ = 0;
  std::vector<double> forward_s_, backward_s_, scratch_;
};

}  // namespace pipescope::planner::detail
