// The search that fixes stages p-1, p-2, ... first (bounds: partition_search.cpp, point 3).
// At a node, stages k..p-1 are fixed and units [0, j) are left for stages 0..k-1.
#include <algorithm>
#include <limits>

#include "partition_search.h"

namespace pipescope::planner::detail {
namespace {

constexpr std::int64_t kNoBytes = std::numeric_limits<std::int64_t>::max();

}  // namespace

bool ReverseSearch::prepare(std::int64_t limit_bytes) {
  prefix_cost_s_.assign(static_cast<size_t>(p_ + 1) * (n_ + 1), kNoPlan);
  prefix_walk_s_.assign(prefix_cost_s_.size(), kNoPlan);
  gpipe_ = problem_.schedule == ScheduleKind::kGPipe;
  prefix_max_forward_s_.assign(gpipe_ ? prefix_cost_s_.size() : 0, kNoPlan);
  prefix_max_backward_s_.assign(prefix_max_forward_s_.size(), kNoPlan);
  prefix_cost_s_[at(0, 0)] = 0;
  prefix_walk_s_[at(0, 0)] = 0;
  if (gpipe_) prefix_max_forward_s_[at(0, 0)] = prefix_max_backward_s_[at(0, 0)] = 0;
  // Stage s = k - 1 holds [begin, j); every other stage needs a unit.
  for (int k = 1; k <= p_; ++k) {
    const int s = k - 1;
    for (int j = k; j <= n_ - (p_ - k); ++j) {
      double cost = kNoPlan, walk = kNoPlan, max_forward = kNoPlan, max_backward = kNoPlan;
      const auto take = [&](int begin, double forward_s, double backward_s) {
        const double before = prefix_cost_s_[at(s, begin)];
        if (before == kNoPlan) return;
        const double c = forward_s + backward_s;
        cost = std::min(cost, before + c);
        // A_s = (chain above s) + m c_s, the chain at least the least cost above plus s d.
        walk = std::min(walk, std::max(prefix_walk_s_[at(s, begin)], before + s * round_trip_s_ + m_ * c));
        if (gpipe_) {
          max_forward = std::min(max_forward, std::max(prefix_max_forward_s_[at(s, begin)], forward_s));
          max_backward = std::min(max_backward, std::max(prefix_max_backward_s_[at(s, begin)], backward_s));
        }
      };
      for (int r : ctx_.options) {
        StageSums sums;
        for (int begin = j - 1; begin >= s; --begin) {
          sums.add(problem_.units[begin], r);
          if (sums.memory_bytes(ctx_.extra_bytes[s], ctx_.in_flight[s]) > limit_bytes) break;  // only grows
          take(begin, sums.forward_s, sums.backward_s);
        }
      }
      if (ctx_.partial.enabled()) {
        // The fewest units on the partial option that fit: the least forward and backward time
        // of every count. (A longer stage can fit again with a count of 1, so no early stop.)
        FewestPartialReverse fewest(ctx_.partial, j, ctx_.extra_bytes[s], ctx_.in_flight[s], limit_bytes);
        for (int begin = j - 2; begin >= s; --begin) {
          const int count = fewest.at(begin);
          if (count > 0) {
            take(begin, ctx_.partial.forward_s(begin, j, count), ctx_.partial.backward_s(begin, j, count));
          }
        }
      }
      if (gpipe_) {
        prefix_max_forward_s_[at(k, j)] = max_forward;
        prefix_max_backward_s_[at(k, j)] = max_backward;
      }
      prefix_cost_s_[at(k, j)] = cost;
      prefix_walk_s_[at(k, j)] = walk;
    }
  }
  table_work_ = path_.build_prefix(problem_, ctx_, limit_bytes);
  if (children_.size() != static_cast<size_t>(p_)) children_.resize(p_);
  return prefix_cost_s_[at(p_, n_)] != kNoPlan;
}

// prefix_peak_bytes_[k][j]: the least peak stage memory of stages 0..k-1 on units [0, j), over
// stages within limit_bytes. The partial option's memory need not fall with its count (a unit it
// recomputes may need more working memory than the activations it saves), so every count is
// tried: bounded, because the stages are within the limit.
void ReverseSearch::peak_table(std::int64_t limit_bytes, bool with_partial) {
  prefix_peak_bytes_.assign(static_cast<size_t>(p_ + 1) * (n_ + 1), kNoBytes);
  prefix_peak_bytes_[at(0, 0)] = 0;
  for (int k = 1; k <= p_; ++k) {
    const int s = k - 1;
    for (int j = k; j <= n_ - (p_ - k); ++j) {
      std::int64_t peak = kNoBytes;
      const auto take = [&](int begin, std::int64_t bytes) {
        if (prefix_peak_bytes_[at(s, begin)] != kNoBytes) {
          peak = std::min(peak, std::max(prefix_peak_bytes_[at(s, begin)], bytes));
        }
      };
      for (int r : ctx_.options) {
        StageSums sums;
        for (int begin = j - 1; begin >= s; --begin) {
          sums.add(problem_.units[begin], r);
          const std::int64_t bytes = sums.memory_bytes(ctx_.extra_bytes[s], ctx_.in_flight[s]);
          if (bytes > limit_bytes) break;  // stage memory only grows with more units
          take(begin, bytes);
        }
      }
      if (with_partial) {
        for (int begin = j - 2; begin >= s; --begin) {
          bool any = false;
          for (int count = 1; count < j - begin; ++count) {
            const std::int64_t bytes =
                ctx_.partial.memory_bytes(begin, j, count, ctx_.extra_bytes[s], ctx_.in_flight[s]);
            if (bytes > limit_bytes) continue;
            any = true;
            take(begin, bytes);
          }
          // Every count keeps at least the units' static memory, which only grows.
          if (!any && ctx_.partial.static_prefix[j] - ctx_.partial.static_prefix[begin] > limit_bytes) break;
        }
      }
      prefix_peak_bytes_[at(k, j)] = peak;
    }
  }
}

std::int64_t ReverseSearch::least_peak_bytes() {
  peak_table(kNoBytes, false);
  if (!ctx_.partial.enabled()) return prefix_peak_bytes_[at(p_, n_)];
  // Plans without partial counts are plans too: their least peak bounds the stages worth trying.
  peak_table(prefix_peak_bytes_[at(p_, n_)], true);
  return prefix_peak_bytes_[at(p_, n_)];
}

FoundPlan ReverseSearch::least_peak_plan() {
  const std::int64_t peak = least_peak_bytes();
  FoundPlan plan;
  plan.peak_bytes = peak;
  plan.choice.boundaries.assign(static_cast<size_t>(p_) + 1, n_);
  plan.choice.options.assign(static_cast<size_t>(p_), 0);
  // Walk the DP back: stage s on [begin, j) within the peak, with stages 0..s-1 on [0, begin)
  // able to stay within it too.
  if (ctx_.partial.enabled()) plan.choice.partial_units.assign(static_cast<size_t>(p_), 0);
  int j = n_;
  for (int s = p_ - 1; s >= 0; --s) {
    bool placed = false;
    const auto place = [&](int begin, int r, int partial) {
      plan.choice.boundaries[s] = begin;
      plan.choice.options[s] = r;
      if (partial > 0) plan.choice.partial_units[s] = partial;
      placed = true;
    };
    for (int r : ctx_.options) {
      StageSums sums;
      for (int begin = j - 1; begin >= s && !placed; --begin) {
        sums.add(problem_.units[begin], r);
        const std::int64_t bytes = sums.memory_bytes(ctx_.extra_bytes[s], ctx_.in_flight[s]);
        if (bytes > peak) break;
        if (prefix_peak_bytes_[at(s, begin)] <= peak) place(begin, r, 0);
      }
      if (placed) break;
    }
    for (int begin = j - 2; ctx_.partial.enabled() && !placed && begin >= s; --begin) {
      for (int count = 1; count < j - begin && !placed; ++count) {
        const std::int64_t bytes =
            ctx_.partial.memory_bytes(begin, j, count, ctx_.extra_bytes[s], ctx_.in_flight[s]);
        if (bytes <= peak && prefix_peak_bytes_[at(s, begin)] <= peak)
          place(begin, ctx_.partial.option, count);
      }
    }
    j = plan.choice.boundaries[s];
  }
  for (int s = 0; s < p_; ++s) {
    const int first = plan.choice.boundaries[s], end = plan.choice.boundaries[s + 1];
    const int partial = plan.choice.partial_units.empty() ? 0 : plan.choice.partial_units[s];
    const int r = plan.choice.options[s];
    const StageSums sums = partial > 0 ? partial_sums(problem_, first, end, partial, r, ctx_.partial.base)
                                       : partial_sums(problem_, first, end, end - first, r, r);
    forward_s_[s] = sums.forward_s;
    backward_s_[s] = sums.backward_s;
  }
  plan.iteration_s = ctx_.iteration_s(forward_s_, backward_s_, scratch_);
  return plan;
}

void ReverseSearch::run() { descend(p_, n_, -kNoPlan, PathTerms{}, PivotState::empty_suffix(), 0, 0.0); }

// Bound (e): GPipe's time is exactly sum F + (m - 1) max F + sum B + (m - 1) max B + (p - 1) d
// (forwards and backwards each form a flow shop; test GPipe.UnequalStagesFollowTheFlowShopFormula).
// With the open stages at their least sum and least maxima it bounds every completion.
double ReverseSearch::gpipe_bound(int stage, int k, int j, double extra_forward_s,
                                  double extra_backward_s) const {
  double sum = prefix_cost_s_[at(k, j)] + extra_forward_s + extra_backward_s;
  double max_forward = std::max(prefix_max_forward_s_[at(k, j)], extra_forward_s);
  double max_backward = std::max(prefix_max_backward_s_[at(k, j)], extra_backward_s);
  for (int s = stage; s < p_; ++s) {
    sum += forward_s_[s] + backward_s_[s];
    max_forward = std::max(max_forward, forward_s_[s]);
    max_backward = std::max(max_backward, backward_s_[s]);
  }
  return sum + (m_ - 1) * (max_forward + max_backward) + (p_ - 1) * round_trip_s_;
}

// suffix_walk_s: max over fixed t of (sum over fixed s < t of (c_s + d) + m c_t), bound (c) of
// the fixed stages measured from the first fixed one; path: their weighted critical-path
// terms (bound (f)).
void ReverseSearch::descend(int stage, int unit, double suffix_walk_s, const PathTerms& path,
                            const PivotState& pivot, std::int64_t peak_bytes, double bound_s) {
  if (!enter_node()) {
    note_unexplored(bound_s);
    return;
  }
  if (stage == 0) {
    leaf(peak_bytes);
    return;
  }
  // Bounds (a) and (b): open stages at zero cost, paths through the deepest open stage.
  std::fill(forward_s_.begin(), forward_s_.begin() + stage, 0.0);
  std::fill(backward_s_.begin(), backward_s_.begin() + stage, 0.0);
  ++stats_.simulations;
  const auto relaxed = ctx_.dag.longest_paths(stage - 1, forward_s_, backward_s_, ctx_.p2p_forward_s,
                                              ctx_.p2p_backward_s, scratch_);
  double bound = std::max(relaxed.total_s, relaxed.through_s + prefix_cost_s_[at(stage, unit)]);
  if (gpipe_) bound = std::max(bound, gpipe_bound(stage, stage, unit, 0, 0));
  if (hopeless(bound)) return;
  expand(stage, unit, suffix_walk_s, path, pivot, relaxed.total_s, relaxed.through_s);
  const int s = stage - 1;
  for (const SearchChild& child : children_[s]) {
    if (stop_) {
      note_unexplored(child.time_bound_s);  // children are in bound order: the least of the rest
      break;
    }
    if (hopeless(child.time_bound_s)) break;
    begins_[s] = child.begin;
    options_[s] = child.option;
    partials_[s] = child.partial;
    // Left to right, as evaluate_plan() sums.
    const StageSums exact =
        child.partial > 0
            ? partial_sums(problem_, child.begin, unit, child.partial, child.option, ctx_.partial.base)
            : partial_sums(problem_, child.begin, unit, unit - child.begin, child.option, child.option);
    forward_s_[s] = exact.forward_s;
    backward_s_[s] = exact.backward_s;
    descend(s, child.begin, child.walk_s, child.path, child.pivot, std::max(peak_bytes, child.memory_bytes),
            child.time_bound_s);
  }
}

void ReverseSearch::expand(int stage, int unit, double suffix_walk_s, const PathTerms& path,
                           const PivotState& pivot, double total_s, double through_s) {
  const int s = stage - 1;  // the stage to fix: [begin, unit)
  std::vector<SearchChild>& children = children_[s];
  children.clear();
  const size_t options = ctx_.options.size();
  sums_.assign(options, StageSums{});
  open_.assign(options, 1);
  size_t open_count = options;
  const auto add = [&](int begin, int r, int partial, double forward_s, double backward_s, std::int64_t bytes,
                       size_t group) {
    const double before = prefix_cost_s_[at(s, begin)];
    if (before == kNoPlan) return;
    SearchChild child;
    child.begin = begin;
    child.end = unit;
    child.option = r;
    child.partial = partial;
    child.forward_s = forward_s;
    child.backward_s = backward_s;
    child.memory_bytes = bytes;
    const double c = child.forward_s + child.backward_s;
    child.walk_s = std::max(m_ * c, c + round_trip_s_ + suffix_walk_s);
    child.time_bound_s =
        std::max({total_s, through_s + c + before,                                            // (a), (d)
                  prefix_walk_s_[at(s, begin)], before + s * round_trip_s_ + child.walk_s});  // (c)
    if (gpipe_) {
      child.time_bound_s =
          std::max(child.time_bound_s, gpipe_bound(stage, s, begin, child.forward_s, child.backward_s));
    }
    if (weigh(child.time_bound_s)) {  // (f), (g)
      child.path = path_.with_stage(path, s, child.forward_s, child.backward_s);
      child.time_bound_s = std::max(child.time_bound_s, path_.bound_s(child.path, s, begin));
      child.order_s = child.time_bound_s;
      if (pivot_.active()) {
        child.pivot = pivot_.before_suffix(pivot, s, child.forward_s, child.backward_s);
        child.time_bound_s = std::max(child.time_bound_s, pivot_.bound_before_suffix(child.pivot, s, begin));
      }
    }
    add_undominated(children, group, child);
  };
  const bool partial = ctx_.partial.enabled();
  FewestPartialReverse fewest(ctx_.partial, unit, ctx_.extra_bytes[s], ctx_.in_flight[s], limit_bytes_);
  const auto partial_may_fit = [&](int begin) {
    // Every count keeps at least the units' static memory, which only grows as the stage does.
    return partial &&
           ctx_.extra_bytes[s] + ctx_.partial.static_prefix[unit] - ctx_.partial.static_prefix[begin] <=
               limit_bytes_;
  };
  for (int begin = unit - 1; begin >= s && (open_count > 0 || partial_may_fit(begin)); --begin) {
    const size_t group = children.size();  // this begin's children start here
    for (size_t i = 0; i < options; ++i) {
      if (!open_[i]) continue;
      const int r = ctx_.options[i];
      sums_[i].add(problem_.units[begin], r);
      const std::int64_t bytes = sums_[i].memory_bytes(ctx_.extra_bytes[s], ctx_.in_flight[s]);
      if (bytes > limit_bytes_) {  // stage memory only grows with more units
        open_[i] = 0;
        --open_count;
        continue;
      }
      add(begin, r, 0, sums_[i].forward_s, sums_[i].backward_s, bytes, group);
    }
    if (!partial) continue;
    // The fewest units on the partial option that fit: the fastest of its counts.
    const int count = fewest.at(begin);
    if (count == 0) continue;
    add(begin, ctx_.partial.option, count, ctx_.partial.forward_s(begin, unit, count),
        ctx_.partial.backward_s(begin, unit, count),
        ctx_.partial.memory_bytes(begin, unit, count, ctx_.extra_bytes[s], ctx_.in_flight[s]), group);
  }
  std::sort(children.begin(), children.end(), [](const SearchChild& a, const SearchChild& b) {
    if (a.time_bound_s != b.time_bound_s) return a.time_bound_s < b.time_bound_s;
    if (a.order_s != b.order_s) return a.order_s < b.order_s;
    if (a.memory_bytes != b.memory_bytes) return a.memory_bytes < b.memory_bytes;
    return a.begin != b.begin ? a.begin > b.begin : a.option < b.option;
  });
}

}  // namespace pipescope::planner::detail
