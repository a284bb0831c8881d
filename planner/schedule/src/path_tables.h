// The critical-path bound (partition_bound.h) for partial plans, in O(1) per search node. A
// convex combination of critical paths weighs any plan's stage times into a lower bound on its
// time: T >= sum_s (wf_s F_s + wb_s B_s) + hops. With some stages fixed, their terms are known
// and the open stages' least weighted cost over the ways to fill them within the memory limit is
// a DP table (by first unit for the stages after a prefix, by last unit for those before a
// suffix), so that fixed part + table + hops bounds every completion of the node. The weights are
// valid for every plan whatever limit they were found at; only the tables depend on the limit.
//
// The tables hold several weight sets at once, filled in one pass: the combination with the
// best bound at the root, and single paths it weighs. Each bounds every plan, so a node takes the
// largest. Below the root the best combination for a subtree is rarely the root's, and a single
// path that the fixed stages load heavily bounds it far better.
#pragma once

#include <algorithm>
#include <array>
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

constexpr int kMostWeightSets = 16;

// A partial plan's fixed stages weighed by each set.
struct PathTerms {
  std::array<double, kMostWeightSets> fixed_s{};
};

class PathTables {
 public:
  // Up to kMostWeightSets sets (empty ones skipped, the first kept first); none: no bound.
  void set_weights(const std::vector<PathWeights>& sets);
  void set_weights(const PathWeights& weights) { set_weights(std::vector<PathWeights>{weights}); }
  bool active() const { return sets_ > 0; }
  int sets() const { return sets_; }

  // Fills the tables of the least weighted cost of stages k.. on units [j, n) (suffix) or of
  // stages ..k-1 on units [0, j) (prefix), each stage within limit_bytes; returns the work done,
  // in the search's units (about one per candidate stage and per six sets). Without weights
  // both are empty and every bound below is 0.
  std::int64_t build_suffix(const PartitionProblem& problem, const PartitionContext& ctx,
                            std::int64_t limit_bytes);
  std::int64_t build_prefix(const PartitionProblem& problem, const PartitionContext& ctx,
                            std::int64_t limit_bytes);

  // After build_suffix(): the stage times of a plan that attains the first set's open_s(0, 0, 0)
  // (finite).
  void least_plan(const PartitionProblem& problem, const PartitionContext& ctx,
                  std::vector<double>& forward_s, std::vector<double>& backward_s) const;

  // One stage's term under a set.
  double stage_s(int set, int stage, double forward_s, double backward_s) const {
    const size_t at = static_cast<size_t>(stage) * sets_ + set;
    return forward_[at] * forward_s + backward_[at] * backward_s;
  }
  // `terms` with one more fixed stage.
  PathTerms with_stage(const PathTerms& terms, int stage, double forward_s, double backward_s) const {
    PathTerms out = terms;
    for (int i = 0; i < sets_; ++i) out.fixed_s[i] += stage_s(i, stage, forward_s, backward_s);
    return out;
  }
  // A set's least weighted cost of the open stages (+infinity: none fit): [k][j] as built above.
  double open_s(int set, int k, int j) const { return table_[cell(k, j) + set]; }
  // A lower bound under one set on every completion of a node whose fixed stages weigh fixed_s
  // and whose open stages are (k, j): within a relative 1e-9 below, for the prefix sums'
  // rounding on the partial option and the path's own order of summation.
  double bound_s(int set, double fixed_s, int k, int j) const {
    return (fixed_s + open_s(set, k, j) + hops_s_[set]) * (1 - 1e-9);
  }
  // The largest of the sets' bounds; 0 without weights.
  double bound_s(const PathTerms& terms, int k, int j) const {
    double bound = 0;
    for (int i = 0; i < sets_; ++i) bound = std::max(bound, bound_s(i, terms.fixed_s[i], k, j));
    return bound;
  }

 private:
  bool reset(int units, int stages);  // sizes the tables, all +infinity; false without weights
  size_t cell(int k, int j) const { return (static_cast<size_t>(k) * width_ + j) * sets_; }

  int sets_ = 0;
  std::vector<double> forward_, backward_;  // [stage][set]
  std::array<double, kMostWeightSets> hops_s_{};
  std::vector<double> table_;  // [k][j][set]
  size_t width_ = 0;
  struct Choice {
    int end = 0, option = 0, partial = 0;
  };
  std::vector<Choice> choice_;  // build_suffix()'s for the first set, per cell
};

}  // namespace pipescope::planner::detail
