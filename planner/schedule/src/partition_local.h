// A local search for lower peaks within a time limit: it only supplies plans (upper bounds) to
// the exact search, which alone proves anything. Moving one stage boundary by one unit and giving
// every stage the fastest option that keeps it below the current peak reaches, in milliseconds,
// plans the depth-first search meets only after many nodes when the time limit is tight.
#pragma once

#include <cstdint>
#include <vector>

#include "partition_costs.h"
#include "partition_search.h"

namespace pipescope::planner::detail {

class LocalPeakSearch {
 public:
  LocalPeakSearch(const PartitionProblem& problem, const PartitionContext& ctx);

  // From `start` (within limit_s), boundary moves while some lowers the peak and stays within
  // limit_s, spending at most max_work schedule operations. Returns the best plan (start when
  // nothing was better); *work_used says what it spent.
  FoundPlan improve(const FoundPlan& start, double limit_s, std::int64_t max_work, std::int64_t* work_used);

 private:
  // Stage s on [first, end): the fastest option (and partial count) within limit_bytes; false if
  // none is.
  bool fastest_within(int s, int first, int end, std::int64_t limit_bytes, int& option, int& partial,
                      StageSums& sums) const;
  // The plan on `boundaries` with every stage the fastest it can be below limit_bytes, timed;
  // false when a stage cannot stay below it.
  bool evaluate(const std::vector<int>& boundaries, std::int64_t limit_bytes, FoundPlan& out);

  const PartitionProblem& problem_;
  const PartitionContext& ctx_;
  int p_ = 0;
  std::vector<double> forward_s_, backward_s_, scratch_;
};

}  // namespace pipescope::planner::detail
