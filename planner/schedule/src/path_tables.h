// The critical-path bound (partition_bound.h) for partial plans, in O(1) per search node. A
// convex combination of critical paths weighs any plan's stage times into a lower bound on its
// time: T >= sum_s (wf_s F_s + wb_s B_s) + hops. With some stages fixed, their terms are known
// and the open stages' least weighted cost over the ways to fill them within the memory limit is
// a DP table (by first unit for the stages after a prefix, by last unit for those before a
// suffix), so that fixed part + table + hops bounds every completion of the node. The weights are
// valid for every plan whatever limit they were found at; only the tables depend on the limit.
#pragma once

#include <cstdint>
#include <vector>

#include "partition_costs.h"

namespace pipescope::planner::detail {

// sum_q lambda_q (path q's op counts), lambda >= 0 with sum <= 1: every path exists in every
// plan's graph and is no longer than its longest path, so neither is the combination.
struct PathWeights {
  std::vector<double> forward, backward;  // per stage: weights of F_s and B_s
  double hops_s = 0;                      // the combination's p2p time
  bool empty() const { return forward.empty(); }
};

class PathTables {
 public:
  void set_weights(const PathWeights& weights) { weights_ = weights; }
  const PathWeights& weights() const { return weights_; }
  bool active() const { return !weights_.empty(); }

  // Fills the table of the least weighted cost of stages k.. on units [j, n) (suffix) or of
  // stages ..k-1 on units [0, j) (prefix), each stage within limit_bytes; returns the DP cells
  // visited. Without weights both are empty and every bound below is 0.
  std::int64_t build_suffix(const PartitionProblem& problem, const PartitionContext& ctx,
                            std::int64_t limit_bytes);
  std::int64_t build_prefix(const PartitionProblem& problem, const PartitionContext& ctx,
                            std::int64_t limit_bytes);

  // After build_suffix(): the stage times of a plan that attains open_s(0, 0) (finite).
  void least_plan(const PartitionProblem& problem, const PartitionContext& ctx,
                  std::vector<double>& forward_s, std::vector<double>& backward_s) const;

  // One stage's term.
  double stage_s(int stage, double forward_s, double backward_s) const {
    return weights_.forward[stage] * forward_s + weights_.backward[stage] * backward_s;
  }
  // The least weighted cost of the open stages (+infinity: none fit): [k][j] as built above.
  double open_s(int k, int j) const { return table_[static_cast<size_t>(k) * width_ + j]; }
  // A lower bound on every completion of a node whose fixed stages sum to fixed_s and whose open
  // stages are (k, j): within a relative 1e-9 below, for the prefix sums' rounding on the
  // partial option and the path's own order of summation.
  double bound_s(double fixed_s, int k, int j) const {
    if (!active()) return 0;
    return (fixed_s + open_s(k, j) + weights_.hops_s) * (1 - 1e-9);
  }

 private:
  bool reset(int units, int stages);  // sizes the table, all +infinity; false without weights

  PathWeights weights_;
  std::vector<double> table_;
  size_t width_ = 0;
  struct Choice {
    int end = 0, option = 0, partial = 0;
  };
  std::vector<Choice> choice_;  // build_suffix()'s, per cell
};

}  // namespace pipescope::planner::detail
