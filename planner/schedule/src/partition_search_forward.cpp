// The search that fixes stages 0, 1, ... first (bounds: partition_search.cpp, point 3).
// At a node, stages 0..k-1 are fixed and units [j, n) are left for stages k..p-1.
#include <algorithm>

#include "partition_search.h"

namespace pipescope::planner::detail {

bool ForwardSearch::prepare(std::int64_t limit_bytes) {
  suffix_cost_s_.assign(static_cast<size_t>(p_ + 1) * (n_ + 1), kNoPlan);
  suffix_walk_s_.assign(suffix_cost_s_.size(), kNoPlan);
  suffix_cost_s_[at(p_, n_)] = 0;
  // Stage k holds [j, end); every other stage needs a unit. walk: the exact least, over the ways
  // to fill stages k.., of max_t (sum_{k<=s<t} (c_s + d) + m c_t), least-c options taken.
  for (int k = p_ - 1; k >= 0; --k) {
    const bool last = k == p_ - 1;
    const int last_end = n_ - (p_ - k - 1);
    for (int j = k; j < last_end; ++j) {
      double cost = kNoPlan, walk = kNoPlan;
      const auto take = [&](int end, double c, double after) {
        cost = std::min(cost, c + after);
        walk = std::min(walk,
                        last ? m_ * c : std::max(m_ * c, c + round_trip_s_ + suffix_walk_s_[at(k + 1, end)]));
      };
      for (int r : ctx_.options) {
        StageSums sums;
        for (int end = j + 1; end <= last_end; ++end) {
          sums.add(problem_.units[end - 1], r);
          const std::int64_t bytes = sums.memory_bytes(ctx_.extra_bytes[k], ctx_.in_flight[k]);
          if (bytes > limit_bytes) break;  // stage memory only grows with more units
          const double after = suffix_cost_s_[at(k + 1, end)];
          if (after == kNoPlan) continue;
          take(end, sums.forward_s + sums.backward_s, after);
        }
      }
      if (ctx_.partial.enabled()) {
        // The fewest units on the partial option that fit: the least time of every count.
        FewestPartialForward fewest(ctx_.partial, j, ctx_.extra_bytes[k], ctx_.in_flight[k], limit_bytes);
        for (int end = j + 1; end <= last_end && !fewest.done(); ++end) {
          const int count = fewest.at(end);
          const double after = suffix_cost_s_[at(k + 1, end)];
          if (count == 0 || after == kNoPlan) continue;
          take(end, ctx_.partial.cost_s(j, end, count), after);
        }
      }
      suffix_cost_s_[at(k, j)] = cost;
      suffix_walk_s_[at(k, j)] = walk;
    }
  }
  table_work_ = path_.build_suffix(problem_, ctx_, limit_bytes);
  if (children_.size() != static_cast<size_t>(p_)) children_.resize(p_);
  return suffix_cost_s_[at(0, 0)] != kNoPlan;
}

void ForwardSearch::run() { descend(0, 0, 0.0, 0.0, PathTerms{}, PivotState::empty_prefix(), 0, 0.0); }

// chain_s: sum over fixed s of (c_s + d); walk_s: max over fixed t of A_t (bound (c)); path:
// the fixed stages' weighted critical-path terms (bound (f)); bound_s: the node's bound as its
// parent computed it.
void ForwardSearch::descend(int stage, int unit, double chain_s, double walk_s, const PathTerms& path,
                            const PivotState& pivot, std::int64_t peak_bytes, double bound_s) {
  if (!enter_node()) {
    note_unexplored(bound_s);
    return;
  }
  if (stage == p_) {
    leaf(peak_bytes);
    return;
  }
  // Bounds (a) and (b): open stages at zero cost, paths through the last stage.
  std::fill(forward_s_.begin() + stage, forward_s_.end(), 0.0);
  std::fill(backward_s_.begin() + stage, backward_s_.end(), 0.0);
  ++stats_.simulations;
  const auto relaxed = ctx_.dag.longest_paths(p_ - 1, forward_s_, backward_s_, ctx_.p2p_forward_s,
                                              ctx_.p2p_backward_s, scratch_);
  if (hopeless(std::max(relaxed.total_s, relaxed.through_s + suffix_cost_s_[at(stage, unit)]))) return;
  expand(stage, unit, chain_s, walk_s, path, pivot, relaxed.total_s, relaxed.through_s);
  for (const SearchChild& child : children_[stage]) {
    if (stop_) {
      note_unexplored(child.time_bound_s);  // children are in bound order: the least of the rest
      break;
    }
    if (hopeless(child.time_bound_s)) break;
    begins_[stage] = unit;
    options_[stage] = child.option;
    partials_[stage] = child.partial;
    // The sums were accumulated left to right already, as evaluate_plan() does.
    forward_s_[stage] = child.forward_s;
    backward_s_[stage] = child.backward_s;
    const double c = child.forward_s + child.backward_s;
    descend(stage + 1, child.end, chain_s + c + round_trip_s_, child.walk_s, child.path, child.pivot,
            std::max(peak_bytes, child.memory_bytes), child.time_bound_s);
  }
}

void ForwardSearch::expand(int stage, int unit, double chain_s, double walk_s, const PathTerms& path,
                           const PivotState& pivot, double total_s, double through_s) {
  std::vector<SearchChild>& children = children_[stage];
  children.clear();
  const bool last = stage == p_ - 1;
  const int last_end = n_ - (p_ - stage - 1);
  const size_t options = ctx_.options.size();
  sums_.assign(options, StageSums{});
  open_.assign(options, 1);
  size_t open_count = options;
  const auto add = [&](int end, int r, int partial, const StageSums& sums, std::int64_t bytes, size_t group) {
    const double after = suffix_cost_s_[at(stage + 1, end)];
    if (after == kNoPlan) return;
    SearchChild child;
    child.begin = unit;
    child.end = end;
    child.option = r;
    child.partial = partial;
    child.forward_s = sums.forward_s;
    child.backward_s = sums.backward_s;
    child.memory_bytes = bytes;
    const double c = child.forward_s + child.backward_s;
    child.walk_s = std::max(walk_s, chain_s + m_ * c);
    double bound = std::max({total_s, through_s + c + after, child.walk_s});  // (a), (d), (c)
    if (!last) bound = std::max(bound, chain_s + c + round_trip_s_ + suffix_walk_s_[at(stage + 1, end)]);
    if (weigh(bound)) {  // (f), (g)
      child.path = path_.with_stage(path, stage, child.forward_s, child.backward_s);
      bound = std::max(bound, path_.bound_s(child.path, stage + 1, end));
      child.order_s = bound;
      if (pivot_.active()) {
        child.pivot = pivot_.after_prefix(pivot, stage, child.forward_s, child.backward_s);
        bound = std::max(bound, pivot_.bound_after_prefix(child.pivot, stage + 1, end));
      }
    }
    child.time_bound_s = bound;
    add_undominated(children, group, child);
  };
  // The partial option with the fewest units on it that fit (the fastest of its counts), its sums
  // kept left to right and started again when the count moves.
  const bool partial = ctx_.partial.enabled();
  FewestPartialForward fewest(ctx_.partial, unit, ctx_.extra_bytes[stage], ctx_.in_flight[stage],
                              limit_bytes_);
  StageSums partial_sums_of;
  int summed_count = 0, summed_end = unit;
  for (int end = unit + 1; end <= last_end && (open_count > 0 || (partial && !fewest.done())); ++end) {
    const size_t group = children.size();  // this end's children start here
    for (size_t i = 0; i < options; ++i) {
      if (!open_[i]) continue;
      const int r = ctx_.options[i];
      sums_[i].add(problem_.units[end - 1], r);
      const std::int64_t bytes = sums_[i].memory_bytes(ctx_.extra_bytes[stage], ctx_.in_flight[stage]);
      if (bytes > limit_bytes_) {  // stage memory only grows with more units
        open_[i] = 0;
        --open_count;
        continue;
      }
      add(end, r, 0, sums_[i], bytes, group);
    }
    if (!partial || fewest.done()) continue;
    const int count = fewest.at(end);
    if (count == 0) continue;
    if (count == summed_count && summed_end == end - 1) {
      partial_sums_of.add(problem_.units[end - 1], ctx_.partial.base);  // past the count: on the base
    } else {
      partial_sums_of = partial_sums(problem_, unit, end, count, ctx_.partial.option, ctx_.partial.base);
    }
    summed_count = count;
    summed_end = end;
    add(end, ctx_.partial.option, count, partial_sums_of,
        partial_sums_of.memory_bytes(ctx_.extra_bytes[stage], ctx_.in_flight[stage]), group);
  }
  std::sort(children.begin(), children.end(), [](const SearchChild& a, const SearchChild& b) {
    if (a.time_bound_s != b.time_bound_s) return a.time_bound_s < b.time_bound_s;
    if (a.order_s != b.order_s) return a.order_s < b.order_s;
    if (a.memory_bytes != b.memory_bytes) return a.memory_bytes < b.memory_bytes;
    return a.end != b.end ? a.end < b.end : a.option < b.option;
  });
}

}  // namespace pipescope::planner::detail
