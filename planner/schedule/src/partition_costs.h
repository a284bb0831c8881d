// What plan evaluation and the partition search share, so that both compute a stage's sums in
// the same order and therefore bit-identical times: the optimizer's answer and a brute force
// over evaluate_plan() can be compared with ==.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/partition_plan.h"
#include "pipescope/planner/schedule_dag.h"

namespace pipescope::planner::detail {

// A time, bound or table entry where no plan fits.
inline constexpr double kNoPlan = std::numeric_limits<double>::infinity();

// One stage's units under one option, added left to right.
struct StageSums {
  double forward_s = 0;
  double backward_s = 0;
  std::int64_t static_bytes = 0;
  std::int64_t activation_bytes = 0;
  std::int64_t transient_bytes = 0;  // the largest unit's
  std::int64_t step_bytes = 0;

  void add(const PartitionUnit& unit, int option) {
    const UnitOptionCost& c = unit.options[option];
    forward_s += c.forward_s;
    backward_s += c.backward_s;
    static_bytes += unit.static_bytes;
    activation_bytes += c.activation_bytes;
    transient_bytes = std::max(transient_bytes, c.transient_bytes);
    step_bytes += unit.step_bytes;
  }
  std::int64_t memory_bytes(std::int64_t extra_bytes, int in_flight) const {
    return stage_memory_bytes(extra_bytes + static_bytes, in_flight * activation_bytes + transient_bytes,
                              step_bytes);
  }
};

// One stage's units with the first `count` under `option` and the rest under `base`, added left
// to right as evaluate_plan() adds them.
inline StageSums partial_sums(const PartitionProblem& problem, int begin, int end, int count, int option,
                              int base) {
  StageSums sums;
  for (int u = begin; u < end; ++u) sums.add(problem.units[u], u < begin + count ? option : base);
  return sums;
}

// The largest value over any range [l, r) of a sequence in O(1): a sparse table.
class RangeMax {
 public:
  void build(const std::vector<std::int64_t>& values);
  std::int64_t max(int l, int r) const;  // 0 for an empty range

 private:
  std::vector<std::vector<std::int64_t>> levels_;  // [k][i]: the largest of values[i, i + 2^k)
};

// A stage's memory under the partial option in O(1), from prefix sums: the search tries many
// counts of recomputed units for each range of units.
struct PartialCosts {
  int option = -1;  // PartitionProblem::partial_option; -1: none
  int base = 0;
  std::vector<std::int64_t> static_prefix, step_prefix, option_activation_prefix, base_activation_prefix;
  RangeMax option_transient, base_transient;

  // Forward and backward times from prefix sums: for bounds (rounding differs from the
  // left-to-right sums of evaluate_plan() by a few ulps).
  std::vector<double> option_forward_prefix, option_backward_prefix, base_forward_prefix,
      base_backward_prefix;

  bool enabled() const { return option >= 0; }
  void build(const PartitionProblem& problem);
  double cost_s(int begin, int end, int count) const {
    const int split = begin + count;
    return option_forward_prefix[split] - option_forward_prefix[begin] + base_forward_prefix[end] -
           base_forward_prefix[split] + option_backward_prefix[split] - option_backward_prefix[begin] +
           base_backward_prefix[end] - base_backward_prefix[split];
  }
  double forward_s(int begin, int end, int count) const {
    const int split = begin + count;
    return option_forward_prefix[split] - option_forward_prefix[begin] + base_forward_prefix[end] -
           base_forward_prefix[split];
  }
  double backward_s(int begin, int end, int count) const {
    const int split = begin + count;
    return option_backward_prefix[split] - option_backward_prefix[begin] + base_backward_prefix[end] -
           base_backward_prefix[split];
  }
  // Units [begin, end), the first `count` under the option, the rest under the base.
  std::int64_t memory_bytes(int begin, int end, int count, std::int64_t extra_bytes, int in_flight) const {
    const int split = begin + count;
    const std::int64_t activation = option_activation_prefix[split] - option_activation_prefix[begin] +
                                    base_activation_prefix[end] - base_activation_prefix[split];
    const std::int64_t transient =
        std::max(option_transient.max(begin, split), base_transient.max(split, end));
    return stage_memory_bytes(extra_bytes + static_prefix[end] - static_prefix[begin],
                              in_flight * activation + transient, step_prefix[end] - step_prefix[begin]);
  }
};

// For a stage from `begin`, end after end: the fewest units on the partial option (1 to all but
// one; all is the plain option) that keep it within a memory limit. That count never falls as the
// stage grows (an added unit only adds memory), so a pointer finds it in amortized O(1) per end.
class FewestPartialForward {
 public:
  FewestPartialForward(const PartialCosts& costs, int begin, std::int64_t extra_bytes, int in_flight,
                       std::int64_t limit_bytes)
      : costs_(costs), begin_(begin), extra_(extra_bytes), in_flight_(in_flight), limit_(limit_bytes) {}
  // Ends must come in increasing order. The count, or 0 when none below all units fits.
  int at(int end) {
    const int units = end - begin_;
    while (count_ < units && costs_.memory_bytes(begin_, end, count_, extra_, in_flight_) > limit_) ++count_;
    if (count_ < units) return count_;
    // Not even the whole stage on the option fits: no count fits at any later end either.
    if (costs_.memory_bytes(begin_, end, units, extra_, in_flight_) > limit_) done_ = true;
    return 0;
  }
  bool done() const { return done_; }

 private:
  const PartialCosts& costs_;
  int begin_;
  std::int64_t extra_;
  int in_flight_;
  std::int64_t limit_;
  int count_ = 1;
  bool done_ = false;
};

// The same for a stage that ends at `end` and grows to the front (begin after begin, falling).
// With the last b units off the option fixed, an added front unit only adds memory, so the most
// units off the option that fit never grow, except that the new front unit alone on it (b = all
// the others) is a new candidate: checked first, then the pointer.
class FewestPartialReverse {
 public:
  FewestPartialReverse(const PartialCosts& costs, int end, std::int64_t extra_bytes, int in_flight,
                       std::int64_t limit_bytes)
      : costs_(costs), end_(end), extra_(extra_bytes), in_flight_(in_flight), limit_(limit_bytes) {}
  int at(int begin) {
    const int units = end_ - begin;
    if (units < 2) return 0;
    if (costs_.memory_bytes(begin, end_, 1, extra_, in_flight_) <= limit_) {
      off_ = units - 1;
      return 1;
    }
    off_ = std::min(off_, units - 2);
    while (off_ >= 1 && costs_.memory_bytes(begin, end_, units - off_, extra_, in_flight_) > limit_) --off_;
    return off_ >= 1 ? units - off_ : 0;
  }

 private:
  const PartialCosts& costs_;
  int end_;
  std::int64_t extra_;
  int in_flight_;
  std::int64_t limit_;
  int off_ = std::numeric_limits<int>::max();  // units off the option at the back
};

// The problem's fixed context: options a stage may take, per-stage in-flight counts and extra
// bytes, the p2p vectors and the schedule graph every plan is timed with.
struct PartitionContext {
  std::vector<int> options;  // allowed, ascending
  PartialCosts partial;
  std::vector<int> in_flight;
  std::vector<std::int64_t> extra_bytes;
  std::vector<double> p2p_forward_s;
  std::vector<double> p2p_backward_s;
  ScheduleDag dag;

  static Expected<PartitionContext> build(const PartitionProblem& problem);

  // Iteration time of per-stage forward and backward times (sizes p).
  double iteration_s(const std::vector<double>& forward_s, const std::vector<double>& backward_s,
                     std::vector<double>& scratch) const {
    return dag.iteration_time(forward_s, backward_s, p2p_forward_s, p2p_backward_s, scratch);
  }
};

// Every way to fill stage k from unit j within a memory limit, ending at most at last_end: each
// option on [j, end) while it fits, and the partial option with the fewest units on it that fit
// (the least time of its counts: partition_search.cpp, point 1). Calls
// fn(end, option, partial, forward_s, backward_s), partial 0 for a plain option; returns the
// candidates examined.
template <class Fn>
std::int64_t for_each_stage_from(const PartitionProblem& problem, const PartitionContext& ctx,
                                 std::int64_t limit_bytes, int k, int j, int last_end, Fn&& fn) {
  std::int64_t candidates = 0;
  for (int r : ctx.options) {
    StageSums sums;
    for (int end = j + 1; end <= last_end; ++end) {
      ++candidates;
      sums.add(problem.units[end - 1], r);
      if (sums.memory_bytes(ctx.extra_bytes[k], ctx.in_flight[k]) > limit_bytes) break;  // only grows
      fn(end, r, 0, sums.forward_s, sums.backward_s);
    }
  }
  if (ctx.partial.enabled()) {
    FewestPartialForward fewest(ctx.partial, j, ctx.extra_bytes[k], ctx.in_flight[k], limit_bytes);
    for (int end = j + 1; end <= last_end && !fewest.done(); ++end) {
      ++candidates;
      const int count = fewest.at(end);
      if (count > 0) {
        fn(end, ctx.partial.option, count, ctx.partial.forward_s(j, end, count),
           ctx.partial.backward_s(j, end, count));
      }
    }
  }
  return candidates;
}

// The same for stage s ending at unit j (exclusive), its first unit from j - 1 down to s; fn
// gets the first unit instead of the end.
template <class Fn>
std::int64_t for_each_stage_to(const PartitionProblem& problem, const PartitionContext& ctx,
                               std::int64_t limit_bytes, int s, int j, Fn&& fn) {
  std::int64_t candidates = 0;
  for (int r : ctx.options) {
    StageSums sums;
    for (int begin = j - 1; begin >= s; --begin) {
      ++candidates;
      sums.add(problem.units[begin], r);
      if (sums.memory_bytes(ctx.extra_bytes[s], ctx.in_flight[s]) > limit_bytes) break;  // only grows
      fn(begin, r, 0, sums.forward_s, sums.backward_s);
    }
  }
  if (ctx.partial.enabled()) {
    // (A longer stage can fit again with a count of 1, so no early stop.)
    FewestPartialReverse fewest(ctx.partial, j, ctx.extra_bytes[s], ctx.in_flight[s], limit_bytes);
    for (int begin = j - 2; begin >= s; --begin) {
      ++candidates;
      const int count = fewest.at(begin);
      if (count > 0) {
        fn(begin, ctx.partial.option, count, ctx.partial.forward_s(begin, j, count),
           ctx.partial.backward_s(begin, j, count));
      }
    }
  }
  return candidates;
}

}  // namespace pipescope::planner::detail
