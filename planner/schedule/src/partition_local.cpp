#include "partition_local.h"

#include <algorithm>
#include <limits>

namespace pipescope::planner::detail {

LocalSearch::LocalSearch(const PartitionProblem& problem, const PartitionContext& ctx)
    : problem_(problem), ctx_(ctx), p_(problem.stages), forward_s_(p_), backward_s_(p_) {}

bool LocalSearch::fastest_within(int s, int first, int end, std::int64_t limit_bytes, int& option,
                                 int& partial, StageSums& sums) const {
  double best_s = std::numeric_limits<double>::infinity();
  const auto consider = [&](int r, int count) {
    const StageSums candidate = count > 0 ? partial_sums(problem_, first, end, count, r, ctx_.partial.base)
                                          : partial_sums(problem_, first, end, end - first, r, r);
    if (candidate.memory_bytes(ctx_.extra_bytes[s], ctx_.in_flight[s]) > limit_bytes) return false;
    const double time_s = candidate.forward_s + candidate.backward_s;
    if (time_s < best_s) {
      best_s = time_s;
      option = r;
      partial = count;
      sums = candidate;
    }
    return true;
  };
  for (int r : ctx_.options) consider(r, 0);
  // The partial option is fastest with the fewest units on it.
  for (int count = 1; ctx_.partial.enabled() && count < end - first; ++count) {
    if (consider(ctx_.partial.option, count)) break;
  }
  return best_s < std::numeric_limits<double>::infinity();
}

bool LocalSearch::evaluate(const std::vector<int>& boundaries, std::int64_t limit_bytes, FoundPlan& out) {
  out.choice.boundaries = boundaries;
  out.choice.options.assign(static_cast<size_t>(p_), 0);
  out.choice.partial_units.assign(ctx_.partial.enabled() ? static_cast<size_t>(p_) : 0, 0);
  out.peak_bytes = 0;
  for (int s = 0; s < p_; ++s) {
    int option = 0, partial = 0;
    StageSums sums;
    if (!fastest_within(s, boundaries[s], boundaries[s + 1], limit_bytes, option, partial, sums))
      return false;
    out.choice.options[s] = option;
    if (ctx_.partial.enabled()) out.choice.partial_units[s] = partial;
    forward_s_[s] = sums.forward_s;
    backward_s_[s] = sums.backward_s;
    out.peak_bytes = std::max(out.peak_bytes, sums.memory_bytes(ctx_.extra_bytes[s], ctx_.in_flight[s]));
  }
  out.iteration_s = ctx_.iteration_s(forward_s_, backward_s_, scratch_);
  return true;
}

FoundPlan LocalSearch::descend(const FoundPlan& start,
                               const std::function<std::int64_t(const FoundPlan&)>& limit_of,
                               const std::function<bool(const FoundPlan&, const FoundPlan&)>& better,
                               std::int64_t max_work, std::int64_t* work_used) {
  const std::int64_t n = static_cast<std::int64_t>(problem_.units.size());
  const std::int64_t move_work = 2 * static_cast<std::int64_t>(p_) * problem_.micro_batches + 2 * n;
  std::int64_t spent = 0;
  FoundPlan best = start;
  std::vector<int> boundaries;
  FoundPlan candidate;
  for (bool improved = true; improved && spent < max_work;) {
    improved = false;
    FoundPlan round_best = best;
    const std::int64_t limit_bytes = limit_of(best);
    const auto try_split = [&](const std::vector<int>& split) {
      spent += move_work;
      if (evaluate(split, limit_bytes, candidate) && better(candidate, round_best)) {
        round_best = candidate;
        improved = true;
      }
    };
    // One boundary moved by one, and also a unit carried from stage s - 1 through every stage to
    // the last (or back), and from the first stage through to stage s: balancing 1F1B memory
    // moves layers off the early stages.
    const auto valid = [&](const std::vector<int>& split) {
      for (int t = 0; t < p_; ++t) {
        if (split[t + 1] <= split[t]) return false;
      }
      return true;
    };
    try_split(best.choice.boundaries);
    for (int s = 1; s < p_ && spent < max_work; ++s) {
      for (int delta : {-1, 1}) {
        for (int range = 0; range < 3; ++range) {
          boundaries = best.choice.boundaries;
          const int from = range == 2 ? 1 : s, to = range == 1 ? p_ - 1 : s;
          if (range > 0 && from == to) continue;  // the same move as range 0
          for (int t = from; t <= to; ++t) boundaries[t] += delta;
          if (valid(boundaries)) try_split(boundaries);
        }
      }
    }
    if (improved) best = round_best;
  }
  if (work_used != nullptr) *work_used = spent;
  return best;
}

FoundPlan LocalSearch::lower_peak(const FoundPlan& start, double limit_s, std::int64_t max_work,
                                  std::int64_t* work_used) {
  // Every stage below the current peak, the lowest peak within the limit, then the fastest.
  return descend(
      start, [](const FoundPlan& best) { return best.peak_bytes - 1; },
      [limit_s](const FoundPlan& x, const FoundPlan& y) {
        if (x.iteration_s > limit_s) return false;
        return x.peak_bytes < y.peak_bytes || (x.peak_bytes == y.peak_bytes && x.iteration_s < y.iteration_s);
      },
      max_work, work_used);
}

FoundPlan LocalSearch::faster(const FoundPlan& start, std::int64_t limit_bytes, std::int64_t max_work,
                              std::int64_t* work_used) {
  return descend(
      start, [limit_bytes](const FoundPlan&) { return limit_bytes; },
      [](const FoundPlan& x, const FoundPlan& y) {
        return x.iteration_s < y.iteration_s ||
               (x.iteration_s == y.iteration_s && x.peak_bytes < y.peak_bytes);
      },
      max_work, work_used);
}

}  // namespace pipescope::planner::detail
