// Exact branch and bound over (contiguous split, per-stage option) plans, in two directions with
// different bounds, run as a portfolio. They answer the questions the objectives are built from:
// the fastest plan under a per-stage memory limit, and whether some plan within a limit meets a
// time bound. The exactness argument is at the top of partition_search.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "partition_costs.h"
#include "path_tables.h"
#include "pipescope/planner/partition_optimizer.h"
#include "pivot_bound.h"

namespace pipescope::planner::detail {

struct FoundPlan {
  PlanChoice choice;
  double iteration_s = 0;
  std::int64_t peak_bytes = 0;
};

struct SearchChild;

// What both directions share: the problem, the incumbent, the cut-off, the work budget, and the
// timing of complete plans.
class SearchBase {
 public:
  SearchBase(const PartitionProblem& problem, const PartitionContext& ctx);
  virtual ~SearchBase() = default;

  struct Outcome {
    bool finished = false;  // the search space was exhausted within the budget: the answer is exact
    bool found = false;
    FoundPlan plan;
    // Cut short (not finished): every plan within the limit that the search did not reach takes
    // at least this long; with the plan found, the least time is within [this, plan's time].
    double lower_bound_s = 0;
  };
  // The least-time plan whose every stage needs at most limit_bytes; with a finite cutoff_s, the
  // first plan found with time <= cutoff_s instead (plans slower than it are not looked for).
  // `seed`, when given, is a plan known to meet the limit: the search only looks for better ones
  // and returns it when there are none. work_budget counts schedule operations (node_work()).
  Outcome search(std::int64_t limit_bytes, double cutoff_s, std::int64_t work_budget,
                 const FoundPlan* seed = nullptr);
  // What one search node costs: a longest-path pass over the 2 p m operations of the schedule
  // plus the expansion's scan over up to n units.
  std::int64_t node_work() const { return node_work_; }

  const PartitionSearchStats& stats() const { return stats_; }
  // Critical-path weights to bound partial plans with (path_tables.h), from now on.
  void use_path_weights(const std::vector<PathWeights>& weights);
  // Pivot paths to bound partial plans with (pivot_bound.h), from now on; they must outlive the
  // search.
  void use_pivot_families(const PivotFamilies* families);

 protected:
  // Fills the direction's tables for a memory limit; false when no plan meets it.
  virtual bool prepare(std::int64_t limit_bytes) = 0;
  // Fills the direction's pivot fronts (pivot_bound.h) for a limit and a ceiling; returns the work.
  virtual std::int64_t prepare_pivots(std::int64_t limit_bytes, double ceiling_s) = 0;
  virtual void run() = 0;
  // After prepare(): a lower bound on the time of every plan within the limit, from the tables
  // alone (the least largest single-stage walk, bound (c), and bounds (f) and (g) at the root).
  virtual double root_bound_s() const = 0;

  bool enter_node();  // counts a node against the budget; false: stop
  // Whether a child whose other bounds give bound_s is worth weighing with bounds (f) and (g):
  // not when those already cut it. Charges the weighing's work when it is.
  bool weigh(double bound_s);
  // A subtree the budget left unexplored, with a lower bound on its plans' times.
  void note_unexplored(double time_bound_s) {
    if (exhausted_) frontier_s_ = std::min(frontier_s_, time_bound_s);
  }
  bool hopeless(double time_bound_s) const;
  // Times the complete plan in begins_/options_/forward_s_/backward_s_.
  void leaf(std::int64_t peak_bytes);

  const PartitionProblem& problem_;
  const PartitionContext& ctx_;
  int n_ = 0;
  int p_ = 0;
  int m_ = 0;
  double round_trip_s_ = 0;  // d: p2p forward + backward across one boundary
  std::int64_t limit_bytes_ = 0;

  std::vector<int> begins_, options_, partials_;  // the plan being built: stage s holds [begins_[s], ...)
  std::vector<double> forward_s_, backward_s_;
  std::vector<double> scratch_;
  std::vector<StageSums> sums_;  // per allowed option, reused by expansions
  std::vector<char> open_;
  std::int64_t table_work_ = 0;  // DP cells the last prepare() filled in path_, charged as work
  PathTables path_;              // the direction's tables
  PivotTables pivot_;  // the direction's pivot fronts: suffix for the forward search, prefix for the reverse
  bool stop_ = false;
  PartitionSearchStats stats_;

 private:
  bool prepared_ = false, prepared_feasible_ = false;
  std::int64_t prepared_limit_ = 0;
  bool pivots_prepared_ = false;
  double pivot_ceiling_s_ = 0;
  double cutoff_s_ = std::numeric_limits<double>::infinity();
  double frontier_s_ = std::numeric_limits<double>::infinity();
  std::int64_t node_work_ = 0;
  std::int64_t budget_left_ = 0;
  bool exhausted_ = false;
  bool found_ = false;
  FoundPlan best_;
};

// A candidate for the stage being fixed, with the bounds of the subtree under it.
struct SearchChild {
  int begin = 0;  // first unit (the reverse search fixes [begin, end of the stage))
  int end = 0;    // one past the last unit
  int option = 0;
  int partial = 0;       // on the partial option: the stage's first units that run it (0: all)
  double forward_s = 0;  // summed in expansion order: for bounds only
  double backward_s = 0;
  std::int64_t memory_bytes = 0;
  double walk_s = 0;  // the direction's single-stage walk term (see the .cpp files)
  PathTerms path;     // the fixed stages' weighted critical-path terms, this one included
  PivotState pivot;   // the fixed stages' pivot terms (pivot_bound.h), this one included
  double time_bound_s = 0;
  double order_s = 0;  // the bound without (g), which many siblings share: it orders their ties
};

// Stages 0, 1, ... first. Bounds: the fixed prefix timed with the rest at zero cost, the longest
// path through the last stage of that relaxed plan plus the least cost of the open stages, and
// single-stage walks of the open suffix from a suffix DP.
class ForwardSearch final : public SearchBase {
 public:
  using SearchBase::SearchBase;

 private:
  bool prepare(std::int64_t limit_bytes) override;
  std::int64_t prepare_pivots(std::int64_t limit_bytes, double ceiling_s) override {
    return pivot_.build_suffix(problem_, ctx_, limit_bytes, ceiling_s);
  }
  void run() override;
  double root_bound_s() const override {
    return std::max({suffix_walk_s_[at(0, 0)], path_.bound_s(PathTerms{}, 0, 0),
                     pivot_.bound_after_prefix(PivotState::empty_prefix(), 0, 0)});
  }
  void descend(int stage, int unit, double chain_s, double walk_s, const PathTerms& path,
               const PivotState& pivot, std::int64_t peak_bytes, double bound_s);
  void expand(int stage, int unit, double chain_s, double walk_s, const PathTerms& path,
              const PivotState& pivot, double total_s, double through_s);
  size_t at(int stage, int unit) const { return static_cast<size_t>(stage) * (n_ + 1) + unit; }

  std::vector<double> suffix_walk_s_;  // [k][j]: least max single-stage walk of stages k.. on units j..
  std::vector<double> suffix_cost_s_;  // [k][j]: least sum of stage costs of stages k.. on units j..
  std::vector<std::vector<SearchChild>> children_;
};

// Stages p-1, p-2, ... first. Bounds: the fixed suffix timed with the open prefix at zero cost,
// the longest path through the last open stage plus the least cost of the open stages, and
// single-stage walks of the open prefix from a prefix DP; for GPipe also its closed form with
// the open stages at their least. Also the least peak over all plans.
class ReverseSearch final : public SearchBase {
 public:
  using SearchBase::SearchBase;
  std::int64_t least_peak_bytes();
  // A plan with that least peak (ties: the first the DP meets), timed.
  FoundPlan least_peak_plan();

 private:
  bool prepare(std::int64_t limit_bytes) override;
  std::int64_t prepare_pivots(std::int64_t limit_bytes, double ceiling_s) override {
    return pivot_.build_prefix(problem_, ctx_, limit_bytes, ceiling_s);
  }
  void run() override;
  double root_bound_s() const override {
    return std::max({prefix_walk_s_[at(p_, n_)], path_.bound_s(PathTerms{}, p_, n_),
                     pivot_.bound_before_suffix(PivotState::empty_suffix(), p_, n_)});
  }
  void peak_table(std::int64_t limit_bytes, bool with_partial);
  void descend(int stage, int unit, double suffix_walk_s, const PathTerms& path, const PivotState& pivot,
               std::int64_t peak_bytes, double bound_s);
  void expand(int stage, int unit, double suffix_walk_s, const PathTerms& path, const PivotState& pivot,
              double total_s, double through_s);
  // The GPipe closed form with fixed stages from `stage` on, `extra` one more (or none), and the
  // open stages 0..k-1 on units [0, j) at their least: a lower bound on every completion.
  double gpipe_bound(int stage, int k, int j, double extra_forward_s, double extra_backward_s) const;
  size_t at(int stages, int units) const { return static_cast<size_t>(stages) * (n_ + 1) + units; }

  std::vector<double> prefix_cost_s_;  // [k][j]: least sum of stage costs of stages 0..k-1 on units 0..j-1
  std::vector<double> prefix_walk_s_;  // [k][j]: lower bound on their longest single-stage walk
  std::vector<std::int64_t> prefix_peak_bytes_;  // [k][j]: least peak stage memory
  // GPipe only, [k][j]: the least largest stage forward and backward time of the open stages.
  std::vector<double> prefix_max_forward_s_, prefix_max_backward_s_;
  bool gpipe_ = false;
  std::vector<std::vector<SearchChild>> children_;
};

// Runs both directions with doubling work budgets, starting each from scratch, until one
// exhausts its space (its answer is then exact) or the budget granted is spent.
class PartitionSearch {
 public:
  PartitionSearch(const PartitionProblem& problem, const PartitionContext& ctx);

  // The least-time plan within limit_bytes per stage, starting from `seed` when given (a plan
  // within the limit): found says whether any plan meets the limit, finished whether the answer
  // is proven, and lower_bound_s bounds the least time when it is not.
  SearchBase::Outcome fastest(std::int64_t limit_bytes, const FoundPlan* seed = nullptr);
  // Some plan within limit_bytes per stage whose time is <= bound_s, spending at most max_work:
  // found, proven none (finished and not found), or unknown (neither).
  SearchBase::Outcome exists(std::int64_t limit_bytes, double bound_s, std::int64_t max_work);
  std::int64_t work_left() const { return work_left_; }
  std::int64_t node_work() const { return forward_.node_work(); }
  std::int64_t least_peak_bytes() { return reverse_.least_peak_bytes(); }
  void use_path_weights(const std::vector<PathWeights>& weights) {
    forward_.use_path_weights(weights);
    reverse_.use_path_weights(weights);
  }
  void use_pivot_families(const PivotFamilies* families) {
    forward_.use_pivot_families(families);
    reverse_.use_pivot_families(families);
  }
  FoundPlan least_peak_plan() { return reverse_.least_peak_plan(); }

  // Work budget: solving stops once it is spent; grant() adds to it (a new phase of the
  // optimizer).
  void grant(std::int64_t work);
  void charge(std::int64_t work) { work_left_ -= work; }  // work spent outside the search
  bool out_of_budget() const { return work_left_ <= 0; }
  PartitionSearchStats stats() const;

 private:
  SearchBase::Outcome solve(std::int64_t limit_bytes, double cutoff_s, const FoundPlan* seed,
                            std::int64_t cap);

  ForwardSearch forward_;
  ReverseSearch reverse_;
  std::int64_t work_left_ = 0;
};

// True when y makes x unnecessary: the same units, no slower forward and backward, and at equal
// times no more memory (within a memory limit both meet, memory does not matter to time).
bool dominates(const SearchChild& y, const SearchChild& x);
// Adds `child` to `children` unless one of those from index `group` on (the same units)
// dominates it, and drops those it dominates.
void add_undominated(std::vector<SearchChild>& children, size_t group, const SearchChild& child);

}  // namespace pipescope::planner::detail
