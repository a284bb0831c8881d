// Lower bounds from single-pivot critical paths, exact over the splits by a DP.
//
// With m close to p the critical path of 1F1B crosses the pipeline once on its way to a pivot
// stage t, runs a long stretch of t's ops, and crosses the stages below t once or twice more on
// the way back: its length is sum_{s<t} alpha_s x_s + kappa_t x_t + sum_{s>t} beta_s x_s + hops_t,
// where x_s = (F_s, B_s) and the weights are its op counts. Which stage is the pivot depends on
// the split: it is the one whose extra layer the split could not avoid. A convex combination of
// paths (partition_bound.h) averages that extra layer over the stages and stays 1-3 % below the
// best split; the largest of the pivot terms does not, and its least over the splits is still a
// DP, because the terms share their weights before the pivot and come in a few classes of
// weights after it: per (stage, unit) the Pareto front of (W, S_1..S_C), W the largest term whose
// pivot lies in the stages so far, S_c the class-c weighted sum that a pivot before them adds.
//
// The pivot paths are found, not assumed: for every stage t and a few shapes of stage times
// (t heavier than the rest; the stages after t lighter too; those before t heavier), the
// simulator's critical path is taken and its counts are split at t. alpha and beta_c are the
// least counts any of those paths has on a stage before or after its pivot, so every term is at
// most the length of a path that exists in every plan's schedule graph, whatever the split:
// T >= max of the terms, for every plan. Also the walks of bound (c) (partition_search.cpp)
// join as a class with beta = 0.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "partition_costs.h"

namespace pipescope::planner::detail {

constexpr int kMostPivotClasses = 4;

// The pivot terms' weights for one problem's schedule.
struct PivotFamilies {
  struct Pivot {
    int cls = 0;  // whose beta weights the stages after it
    double forward = 0, backward = 0;
    double hops_s = 0;
  };
  int classes = 0;
  std::vector<double> alpha_forward, alpha_backward;                               // [stage]
  std::vector<std::array<double, kMostPivotClasses>> beta_forward, beta_backward;  // [stage][class]
  std::vector<std::vector<Pivot>> pivots;  // [stage]: the terms with their pivot there
  std::int64_t work = 0;                   // schedule operations spent finding them

  static PivotFamilies find(const PartitionProblem& problem, const PartitionContext& ctx);
};

// A partial plan summarised for the pivot terms. For stages fixed from the front (the forward
// search): lead = sum of alpha x, per class the largest term with its pivot among them (without
// what later stages add). For stages fixed from the back (the reverse search): lead = the largest
// term with its pivot among them, per class the beta-weighted sum.
struct PivotState {
  double lead = 0;
  std::array<double, kMostPivotClasses> by_class{};
  static PivotState empty_prefix();  // no stage yet: lead 0, classes -infinity
  static PivotState empty_suffix();  // lead -infinity, classes 0
};

class PivotTables {
 public:
  void set_families(const PivotFamilies* families) { families_ = families; }
  bool active() const { return families_ != nullptr && families_->classes > 0; }

  // The Pareto fronts of the stages after (k, j) (suffix) or before it (prefix) within the limit;
  // returns the work done (pairs of a candidate stage and a front point, and their pruning).
  // Points whose terms alone exceed ceiling_s are dropped, leaving their least value as a floor
  // under the cell's bound: a search asks only whether bounds exceed its cut-off or incumbent,
  // which the ceiling is, so a bound clipped to the floor still settles every question it is asked.
  std::int64_t build_suffix(const PartitionProblem& problem, const PartitionContext& ctx,
                            std::int64_t limit_bytes,
                            double ceiling_s = std::numeric_limits<double>::infinity());
  std::int64_t build_prefix(const PartitionProblem& problem, const PartitionContext& ctx,
                            std::int64_t limit_bytes,
                            double ceiling_s = std::numeric_limits<double>::infinity());

  // The state with one more stage fixed: after a prefix (stage `stage` appended) or before a
  // suffix (stage `stage` prepended).
  PivotState after_prefix(const PivotState& prefix, int stage, double forward_s, double backward_s) const;
  PivotState before_suffix(const PivotState& suffix, int stage, double forward_s, double backward_s) const;

  // Lower bounds on every completion within the limit (0 when inactive, +infinity when none
  // fits), within a relative 1e-9 below for rounding: a prefix fixed and stages k.. open on
  // units [j, n) (after build_suffix()), or a suffix fixed and stages ..k-1 open on [0, j)
  // (after build_prefix()). With nothing fixed, both bound every plan.
  double bound_after_prefix(const PivotState& prefix, int k, int j) const;
  double bound_before_suffix(const PivotState& suffix, int k, int j) const;

 private:
  struct Point {
    double lead = 0;                                   // suffix fronts: W; prefix fronts: sum of alpha x
    std::array<double, kMostPivotClasses> by_class{};  // suffix: S_c; prefix: X_c
  };
  bool reset(int units, int stages);
  double least_largest_term(const PivotState& fixed, size_t at) const;
  size_t cell(int k, int j) const { return static_cast<size_t>(k) * width_ + j; }
  // Keeps the candidates no other candidate matches or beats in every coordinate, as the front
  // of the cell being filled; returns the comparisons made.
  std::int64_t keep_front(std::vector<Point>& candidates);

  const PivotFamilies* families_ = nullptr;
  size_t width_ = 0;
  std::vector<std::uint32_t> offset_, count_;  // [cell]: its front is points_[offset_, + count_)
  std::vector<double> floor_;                  // [cell]: the least value of the points dropped
  std::vector<Point> points_;
  std::vector<Point> candidates_;  // scratch
};

}  // namespace pipescope::planner::detail
