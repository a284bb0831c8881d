// Why the search is exact.
//
// 1. Time is monotone. With each stage's op order fixed, an op ends at
//    max(its stage's previous op end, its input's end + p2p) + its duration: max and + only. So
//    every end time, and the iteration time T, is a non-decreasing function of every stage's
//    forward and backward time. Within a memory limit, an option no faster in forward and in
//    backward than another on the same units is never needed. In particular, on the partial
//    option (its first k units recomputed, partition_plan.h) time grows with k and memory kept
//    falls, so for each range of units only the fewest k within the limit is needed.
//
// 2. T is not a function of a few summaries such as (max stage time, sum of stage times): the
//    critical path may spend the steady state on one stage and pick up a deeper stage's warm-up
//    or cool-down, and with p2p latency it gains by zig-zagging between stages. Two plans with
//    stage times {3, 6} take 15 or 13 s (tests: OneFOneB, SlowStageCostsMoreLast). A DP over such
//    summaries followed by a simulation of its front would not be exact, so the search times
//    every complete plan it keeps with the simulator itself and uses summaries only as bounds.
//
// 3. Lower bounds, with c_s = F_s + B_s and d = p2p forward + backward of one boundary. T is the
//    longest path through the schedule's graph from stage 0's first forward to stage 0's last
//    backward (every backward is followed by the one on the stage above, so that op ends last).
//    A node of the search has some stages fixed and the others open.
//    (a) With the open stages at zero cost the plan can only be faster (point 1): T >= T_0.
//    (b) In that relaxed plan take the longest path among those that run an op of stage x. If
//        every such path runs a forward and a backward on every open stage, then in any real
//        plan below the node the same path is longer by at least the open stages' sum of c:
//        T >= through_x + least cost of the open stages (a DP over the ways to place the open
//        units). The reverse search takes x = the deepest open stage (a path from stage 0 down
//        to it crosses every stage above it going down, on forwards, and coming back, on
//        backwards); the forward search takes x = p - 1 (such a path crosses every stage).
//    (c) For every stage t the path "micro-batch 0's forward down to t, every op of t in order,
//        its last backward back up" gives T >= A_t = sum_{s<t} (c_s + d) + m c_t. DP tables give
//        a lower bound on max_t A_t over the ways to fill the open stages.
//    (d) A child fixes one more stage; the path of its parent's bound (b) also runs a forward and
//        a backward on that stage, so the child's plans take >= through_x + c + least cost of
//        the stages still open: a bound for ordering and pruning children without simulating.
//    (e) GPipe only: its time has a closed form (partition_search_reverse.cpp), which with the
//        open stages at their least sum and least largest F and B is a bound.
//    (f) Any convex combination of critical paths (partition_bound.h) is a path length in every
//        plan, so T >= sum_s (wf_s F_s + wb_s B_s) + hops for weights wf, wb >= 0. Below a node
//        the fixed stages' terms are known; the open stages' are at least their least over the
//        ways to fill them within the limit, a DP table per limit (path_tables.h): one lookup per
//        child. Its weights come from the optimizer's critical-path bound at some limit; they
//        hold for every plan, so any limit's weights serve. Several such weight sets (the best
//        combination and single paths of it) each bound every plan; a node takes the largest.
//    (g) Single-pivot paths (pivot_bound.h): T >= the largest of terms sum_{s<t} alpha x_s +
//        kappa_t x_t + hops_t + sum_{s>t} beta_c x_s, each at most the length of a path that
//        exists in every plan. With some stages fixed their part of every term is known; the
//        least over the ways to fill the open stages of the largest term is exact from a Pareto
//        front per (stage, unit), one scan of it per child. Fronts drop points above the
//        search's cut-off or incumbent, keeping their least value as a floor under the bound.
//    Every bound uses, per stage, only the options within the memory limit. The least of (c),
//    (f) and (g) over all plans is also checked before any node: a search whose cut-off or incumbent it
//    already exceeds ends at once, and it bounds every plan a search cut short left unexplored.
//
// 4. Branch and bound. Depth-first, children in ascending bound order; every complete plan
//    reached is timed with the simulator; a subtree is dropped only when its bound shows that no
//    plan in it beats the incumbent, or, with a cut-off, meets it. A search that exhausts its
//    space has therefore found the optimum (or proved there is none under the cut-off). A search
//    may start from a known plan (the uniform one, when it fits) and then only looks for better
//    ones. One that runs out of budget says so, with the least bound among the subtrees it left
//    unexplored: the optimum lies between that and the best plan found. Which
//    direction's bounds bite first depends on where the bottleneck sits (memory-balanced plans
//    load the later stages), so PartitionSearch runs both with doubling budgets, each run from
//    the best plan so far, and after an eighth of its budget gives the rest to the direction
//    whose last run proved the higher bound. The objectives (partition_optimizer.cpp) only
//    combine these answers, critical-path bounds (partition_bound.h) and plans from a local
//    search (partition_local.h, which proves nothing); bisection on the memory limit is valid
//    because the set of plans within a limit grows with the limit.
//
// 5. Floating point. The chosen stages' sums are accumulated unit by unit left to right exactly
//    as evaluate_plan() does and plans are timed with the same graph, so times compare bit for
//    bit. Bounds round differently: a bound is compared with a time allowing a relative 1e-9, and
//    a plan must beat the incumbent by that much to replace it.
#include "partition_search.h"

#include <algorithm>
#include <cmath>

namespace pipescope::planner::detail {
namespace {

double tolerance(double t) { return 1e-9 * std::max(1.0, std::abs(t)); }

}  // namespace

SearchBase::SearchBase(const PartitionProblem& problem, const PartitionContext& ctx)
    : problem_(problem),
      ctx_(ctx),
      n_(static_cast<int>(problem.units.size())),
      p_(problem.stages),
      m_(problem.micro_batches),
      round_trip_s_(problem.p2p_forward_s + problem.p2p_backward_s),
      begins_(p_),
      options_(p_),
      partials_(p_),
      forward_s_(p_),
      backward_s_(p_) {
  node_work_ = 2 * static_cast<std::int64_t>(p_) * m_ + n_;
}

SearchBase::Outcome SearchBase::search(std::int64_t limit_bytes, double cutoff_s, std::int64_t work_budget,
                                       const FoundPlan* seed) {
  limit_bytes_ = limit_bytes;
  cutoff_s_ = cutoff_s;
  frontier_s_ = std::numeric_limits<double>::infinity();
  budget_left_ = work_budget;
  exhausted_ = found_ = stop_ = false;
  if (seed != nullptr) {
    found_ = true;
    best_ = *seed;
  }
  // The tables depend on the limit only: restarts and repeated probes at one limit reuse them.
  if (!prepared_ || prepared_limit_ != limit_bytes) {
    prepared_feasible_ = prepare(limit_bytes);
    prepared_ = true;
    prepared_limit_ = limit_bytes;
    // One table per weight set: with many sets they cost as much as a few hundred nodes.
    budget_left_ -= table_work_;
    stats_.work += table_work_;
    pivots_prepared_ = false;
  }
  // The pivot fronts only need points up to the largest time this search asks about: its
  // cut-off, or the plan it must beat. Repeated searches at one limit ask about less and less.
  const double ceiling_s = std::isfinite(cutoff_s) ? cutoff_s
                           : seed != nullptr       ? seed->iteration_s
                                                   : std::numeric_limits<double>::infinity();
  if (prepared_feasible_ && pivot_.active() && (!pivots_prepared_ || ceiling_s > pivot_ceiling_s_)) {
    const std::int64_t work = prepare_pivots(limit_bytes, ceiling_s);
    budget_left_ -= work;
    stats_.work += work;
    pivots_prepared_ = true;
    pivot_ceiling_s_ = ceiling_s;
  }
  // The tables' own bound settles a search before any node when it is above the cut-off or the
  // seed; it also bounds every plan a search cut short did not reach.
  const double root_s = prepared_feasible_ ? root_bound_s() : std::numeric_limits<double>::infinity();
  if (prepared_feasible_ && !hopeless(root_s)) run();
  Outcome outcome;
  outcome.finished = !exhausted_;
  outcome.found = found_;
  if (found_) outcome.plan = best_;
  const double unexplored_s = std::max(frontier_s_, root_s);
  outcome.lower_bound_s = found_ ? std::min(unexplored_s, best_.iteration_s) : unexplored_s;
  return outcome;
}

void SearchBase::use_path_weights(const std::vector<PathWeights>& weights) {
  path_.set_weights(weights);
  prepared_ = false;  // the tables depend on the weights
}

void SearchBase::use_pivot_families(const PivotFamilies* families) {
  pivot_.set_families(families);
  pivots_prepared_ = false;
}

bool SearchBase::enter_node() {
  if (stop_) return false;
  if (budget_left_ <= 0) {
    exhausted_ = stop_ = true;
    return false;
  }
  budget_left_ -= node_work_;
  stats_.work += node_work_;
  ++stats_.nodes;
  return true;
}

bool SearchBase::weigh(double bound_s) {
  if (hopeless(bound_s) || (!path_.active() && !pivot_.active())) return false;
  // Two multiply-adds per path set, measured like the tables' (BM_PathTables): six sets a unit
  // of work; and a unit per pivot front point scanned, a few on average.
  const std::int64_t work = (path_.sets() + 5) / 6 + (pivot_.active() ? 4 : 0);
  budget_left_ -= work;
  stats_.work += work;
  return true;
}

bool SearchBase::hopeless(double time_bound_s) const {
  if (std::isfinite(cutoff_s_) && time_bound_s > cutoff_s_ + tolerance(cutoff_s_)) return true;
  return found_ && time_bound_s >= best_.iteration_s - tolerance(best_.iteration_s);
}

void SearchBase::leaf(std::int64_t peak_bytes) {
  ++stats_.simulations;
  ++stats_.plans_timed;
  const double t = ctx_.iteration_s(forward_s_, backward_s_, scratch_);
  if (std::isfinite(cutoff_s_) && t > cutoff_s_) return;
  if (found_ && t >= best_.iteration_s - tolerance(best_.iteration_s)) return;
  found_ = true;
  best_.iteration_s = t;
  best_.peak_bytes = peak_bytes;
  best_.choice.boundaries.assign(begins_.begin(), begins_.end());
  best_.choice.boundaries.push_back(n_);
  best_.choice.options = options_;
  if (ctx_.partial.enabled()) {
    best_.choice.partial_units = partials_;
  } else {
    best_.choice.partial_units.clear();
  }
  if (std::isfinite(cutoff_s_)) stop_ = true;  // any plan within the cut-off answers
}

bool dominates(const SearchChild& y, const SearchChild& x) {
  if (y.forward_s > x.forward_s || y.backward_s > x.backward_s) return false;
  return y.forward_s < x.forward_s || y.backward_s < x.backward_s || y.memory_bytes <= x.memory_bytes;
}

void add_undominated(std::vector<SearchChild>& children, size_t group, const SearchChild& child) {
  for (size_t y = group; y < children.size();) {
    if (dominates(children[y], child)) return;  // an earlier, so lower, option stays on ties
    if (dominates(child, children[y])) {
      children.erase(children.begin() + static_cast<std::ptrdiff_t>(y));
    } else {
      ++y;
    }
  }
  children.push_back(child);
}

PartitionSearch::PartitionSearch(const PartitionProblem& problem, const PartitionContext& ctx)
    : forward_(problem, ctx), reverse_(problem, ctx) {}

void PartitionSearch::grant(std::int64_t work) { work_left_ = std::max<std::int64_t>(work_left_, 0) + work; }

SearchBase::Outcome PartitionSearch::solve(std::int64_t limit_bytes, double cutoff_s, const FoundPlan* seed,
                                           std::int64_t cap) {
  SearchBase::Outcome best;
  if (seed != nullptr) {  // returned as it is when the budget allows no search at all
    best.found = true;
    best.plan = *seed;
  }
  double lower_bound_s = 0;  // the best proven across the runs cut short: each one is valid
  const std::int64_t total = std::min(work_left_, cap);
  std::int64_t left = total;
  // Restarts cost what the runs before them spent: alternate while the budgets are small, then
  // give everything left to the direction whose last run proved the higher bound.
  SearchBase* const directions[] = {&reverse_, &forward_};
  double proven_s[] = {0, 0};
  int committed = -1;
  for (std::int64_t budget = 4096 * forward_.node_work(); left > 0; budget *= 2) {
    for (int d = 0; d < 2 && left > 0; ++d) {
      if (committed >= 0 && d != committed) continue;
      SearchBase* direction = directions[d];
      const std::int64_t before = direction->stats().work;
      // Each run starts from the best plan so far: a better incumbent prunes more.
      SearchBase::Outcome outcome =
          direction->search(limit_bytes, cutoff_s, committed >= 0 ? left : std::min(budget, left),
                            best.found ? &best.plan : nullptr);
      const std::int64_t used = direction->stats().work - before;
      left -= used;
      work_left_ -= used;
      if (outcome.finished) return outcome;
      proven_s[d] = outcome.lower_bound_s;
      lower_bound_s = std::max(lower_bound_s, outcome.lower_bound_s);
      // Keep the best plan seen in case the budget runs out: still a plan, just not proven.
      if (outcome.found && (!best.found || outcome.plan.iteration_s < best.plan.iteration_s)) best = outcome;
    }
    if (committed < 0 && total - left >= total / 8) committed = proven_s[1] > proven_s[0] ? 1 : 0;
  }
  best.finished = false;
  best.lower_bound_s = best.found ? std::min(lower_bound_s, best.plan.iteration_s) : lower_bound_s;
  return best;
}

SearchBase::Outcome PartitionSearch::fastest(std::int64_t limit_bytes, const FoundPlan* seed) {
  return solve(limit_bytes, std::numeric_limits<double>::infinity(), seed,
               std::numeric_limits<std::int64_t>::max());
}

SearchBase::Outcome PartitionSearch::exists(std::int64_t limit_bytes, double bound_s, std::int64_t max_work) {
  return solve(limit_bytes, bound_s, nullptr, max_work);
}

PartitionSearchStats PartitionSearch::stats() const {
  PartitionSearchStats total = forward_.stats();
  const PartitionSearchStats& r = reverse_.stats();
  total.nodes += r.nodes;
  total.work += r.work;
  total.simulations += r.simulations;
  total.plans_timed += r.plans_timed;
  return total;
}

}  // namespace pipescope::planner::detail
