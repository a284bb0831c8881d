// Lower bounds on the iteration time of every plan within a memory limit, from whole critical
// paths. The schedule's graph is the same for every plan, so a path found in one plan exists in
// all: its op counts per stage (a_s forwards, b_s backwards) and p2p hops give, for any plan,
// T >= sum_s (a_s F_s + b_s B_s) + hops, and so does any convex combination of such paths. The
// least of a combination over the plans within the limit is a DP over (stage, first unit), like
// the search's own tables. The best combination is a linear program over the paths found so far
// (Kelley's cutting planes): each round adds the plan that minimizes the current combination and
// the critical paths of that plan and of the LP's averaged plan. Every round's DP value is a valid
// bound; the loop only makes it stronger. At m close to p this is the bound that matters: the
// critical path crosses the whole pipeline repeatedly, which no single-stage bound sees.
#pragma once

#include <cstdint>
#include <vector>

#include "partition_costs.h"
#include "path_tables.h"
#include "pipescope/planner/dense_lp.h"

namespace pipescope::planner::detail {

class PathBound {
 public:
  PathBound(const PartitionProblem& problem, const PartitionContext& ctx);

  // Adds the critical path of a plan with these stage times to the paths combined.
  void add_path(const std::vector<double>& forward_s, const std::vector<double>& backward_s);
  std::size_t paths() const { return paths_.size(); }

  // A lower bound on the time of every plan whose stages all stay within limit_bytes (+infinity
  // when there is none), after up to `rounds` rounds; *work_used: schedule operations spent.
  double lower_bound(std::int64_t limit_bytes, int rounds, std::int64_t* work_used);
  // The combination behind the last lower_bound()'s value (empty before any): valid for every
  // plan, whatever the limit, so the searches weigh their partial plans with it (path_tables.h).
  const PathWeights& best_weights() const { return best_weights_; }
  // That combination first, then the paths it weighs most, each alone (up to `most` in all).
  std::vector<PathWeights> weight_sets(int most) const;

 private:
  struct Path {
    std::vector<double> forward_ops, backward_ops;  // per stage
    double hops_s = 0;                              // the p2p time the path crosses
  };
  // The least over plans within the limit of sum_s (wf_s F_s + wb_s B_s), and that plan's stage
  // times; +infinity when no plan is within the limit.
  double weighted_least(std::int64_t limit_bytes, const PathWeights& weights, std::vector<double>& forward_s,
                        std::vector<double>& backward_s);
  double length(const Path& path, const std::vector<double>& forward_s,
                const std::vector<double>& backward_s) const;
  void add_row(const std::vector<double>& forward_s, const std::vector<double>& backward_s);

  const PartitionProblem& problem_;
  const PartitionContext& ctx_;
  int n_ = 0, p_ = 0;
  std::vector<Path> paths_;
  // The plans of the current limit and their path lengths: lengths_[x][q].
  std::vector<std::vector<double>> plan_forward_s_, plan_backward_s_, lengths_;
  PathTables tables_;  // the DP, reused
  PathWeights best_weights_;
  std::vector<double> best_lambda_;  // best_weights_'s weight per path
  std::vector<double> scratch_;
  std::int64_t work_ = 0;  // what the current lower_bound() has cost: DP cells, LP entries, ops timed
  ScheduleDag::PathCounts counts_;
  DenseLp lp_;
  LinearProgram master_;
};

}  // namespace pipescope::planner::detail
