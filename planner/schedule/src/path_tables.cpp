#include "path_tables.h"

#include <algorithm>
#include <limits>

namespace pipescope::planner::detail {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

}  // namespace

bool PathTables::reset(int units, int stages) {
  width_ = static_cast<size_t>(units) + 1;
  if (!active()) {
    table_.clear();
    return false;
  }
  table_.assign(static_cast<size_t>(stages + 1) * width_, kNone);
  return true;
}

std::int64_t PathTables::build_suffix(const PartitionProblem& problem, const PartitionContext& ctx,
                                      std::int64_t limit_bytes) {
  const int n = static_cast<int>(problem.units.size()), p = problem.stages;
  if (!reset(n, p)) return 0;
  choice_.assign(table_.size(), Choice{});
  table_[static_cast<size_t>(p) * width_ + n] = 0;
  std::int64_t cells = 0;
  // Stage k holds [j, end); every later stage needs a unit.
  for (int k = p - 1; k >= 0; --k) {
    const int last_end = n - (p - k - 1);
    for (int j = k; j < last_end; ++j) {
      double least = kNone;
      Choice& pick = choice_[static_cast<size_t>(k) * width_ + j];
      const auto take = [&](int end, int option, int partial, double forward_s, double backward_s) {
        const double after = open_s(k + 1, end);
        if (after == kNone) return;
        const double value = stage_s(k, forward_s, backward_s) + after;
        if (value < least) {
          least = value;
          pick = Choice{end, option, partial};
        }
      };
      for (int r : ctx.options) {
        StageSums sums;
        for (int end = j + 1; end <= last_end; ++end) {
          ++cells;
          sums.add(problem.units[end - 1], r);
          if (sums.memory_bytes(ctx.extra_bytes[k], ctx.in_flight[k]) > limit_bytes) break;  // only grows
          take(end, r, 0, sums.forward_s, sums.backward_s);
        }
      }
      if (ctx.partial.enabled()) {
        // With weights >= 0 the fewest units on the partial option that fit are the least.
        FewestPartialForward fewest(ctx.partial, j, ctx.extra_bytes[k], ctx.in_flight[k], limit_bytes);
        for (int end = j + 1; end <= last_end && !fewest.done(); ++end) {
          ++cells;
          const int count = fewest.at(end);
          if (count > 0) {
            take(end, ctx.partial.option, count, ctx.partial.forward_s(j, end, count),
                 ctx.partial.backward_s(j, end, count));
          }
        }
      }
      table_[static_cast<size_t>(k) * width_ + j] = least;
    }
  }
  return cells;
}

std::int64_t PathTables::build_prefix(const PartitionProblem& problem, const PartitionContext& ctx,
                                      std::int64_t limit_bytes) {
  const int n = static_cast<int>(problem.units.size()), p = problem.stages;
  if (!reset(n, p)) return 0;
  table_[0] = 0;
  std::int64_t cells = 0;
  // Stage s = k - 1 holds [begin, j); every earlier stage needs a unit.
  for (int k = 1; k <= p; ++k) {
    const int s = k - 1;
    for (int j = k; j <= n - (p - k); ++j) {
      double least = kNone;
      const auto take = [&](int begin, double forward_s, double backward_s) {
        const double before = open_s(s, begin);
        if (before != kNone) least = std::min(least, before + stage_s(s, forward_s, backward_s));
      };
      for (int r : ctx.options) {
        StageSums sums;
        for (int begin = j - 1; begin >= s; --begin) {
          ++cells;
          sums.add(problem.units[begin], r);
          if (sums.memory_bytes(ctx.extra_bytes[s], ctx.in_flight[s]) > limit_bytes) break;  // only grows
          take(begin, sums.forward_s, sums.backward_s);
        }
      }
      if (ctx.partial.enabled()) {
        // (A longer stage can fit again with a count of 1, so no early stop.)
        FewestPartialReverse fewest(ctx.partial, j, ctx.extra_bytes[s], ctx.in_flight[s], limit_bytes);
        for (int begin = j - 2; begin >= s; --begin) {
          ++cells;
          const int count = fewest.at(begin);
          if (count > 0) {
            take(begin, ctx.partial.forward_s(begin, j, count), ctx.partial.backward_s(begin, j, count));
          }
        }
      }
      table_[static_cast<size_t>(k) * width_ + j] = least;
    }
  }
  return cells;
}

void PathTables::least_plan(const PartitionProblem& problem, const PartitionContext& ctx,
                            std::vector<double>& forward_s, std::vector<double>& backward_s) const {
  const int p = problem.stages;
  forward_s.assign(static_cast<size_t>(p), 0.0);
  backward_s.assign(static_cast<size_t>(p), 0.0);
  for (int k = 0, j = 0; k < p; ++k) {
    const Choice& pick = choice_[static_cast<size_t>(k) * width_ + j];
    const StageSums sums =
        pick.partial > 0 ? partial_sums(problem, j, pick.end, pick.partial, pick.option, ctx.partial.base)
                         : partial_sums(problem, j, pick.end, pick.end - j, pick.option, pick.option);
    forward_s[k] = sums.forward_s;
    backward_s[k] = sums.backward_s;
    j = pick.end;
  }
}

}  // namespace pipescope::planner::detail
