#include "pivot_bound.h"

#include <algorithm>
#include <cmath>

namespace pipescope::planner::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Shapes of stage times the pivot paths are found with: the stages before t, t itself and the
// stages after it, as factors of an even split's stage time. t alone heavier gives the path that
// goes down and up again below t; the stages after t lighter, the one that ends on t's
// cool-down backwards; a heavy block up to t, the one that picks up the block's warm-up.
struct Shape {
  double before, at, after;
};
constexpr Shape kShapes[] = {{1.0, 1.3, 1.0}, {1.0, 1.3, 0.5}, {1.3, 1.3, 0.5}};
// Fronts hold at most this many points; the rest are merged into one that dominates them all
// (a weaker but valid bound) so that no instance can blow a table up.
constexpr size_t kMostFrontPoints = 16;

// The work charged for pairs of a candidate stage and a front point and for the fronts' pruning:
// about 7 ns each where the search's unit of work is about 2.5 ns (BM_PivotTables measures 2.7 to
// 3.2 ns per unit charged).
std::int64_t charged(std::int64_t pairs) { return pairs * 5 / 2; }

}  // namespace

PivotState PivotState::empty_prefix() {
  PivotState state;
  state.lead = 0;
  state.by_class.fill(-kInf);
  return state;
}

PivotState PivotState::empty_suffix() {
  PivotState state;
  state.lead = -kInf;
  state.by_class.fill(0);
  return state;
}

PivotFamilies PivotFamilies::find(const PartitionProblem& problem, const PartitionContext& ctx) {
  PivotFamilies f;
  const int p = problem.stages;
  const int m = problem.micro_batches;
  const int shapes = static_cast<int>(std::size(kShapes));
  f.alpha_forward.assign(p, kInf);
  f.alpha_backward.assign(p, kInf);
  f.beta_forward.assign(p, {});
  f.beta_backward.assign(p, {});
  f.pivots.assign(p, {});
  // An even split's stage times under the first option, so that p2p latency weighs as it does
  // in real plans.
  double forward = 0, backward = 0;
  for (const PartitionUnit& unit : problem.units) {
    forward += unit.options[ctx.options.front()].forward_s;
    backward += unit.options[ctx.options.front()].backward_s;
  }
  forward = forward > 0 ? forward / p : 1.0;
  backward = backward > 0 ? backward / p : 2.0;

  std::vector<std::vector<double>> beta_f(shapes, std::vector<double>(p, kInf)), beta_b = beta_f;
  std::vector<double> stage_f(p), stage_b(p), scratch;
  ScheduleDag::PathCounts counts;
  for (int c = 0; c < shapes; ++c) {
    for (int t = 0; t < p; ++t) {
      for (int s = 0; s < p; ++s) {
        const double factor = s < t ? kShapes[c].before : s == t ? kShapes[c].at : kShapes[c].after;
        stage_f[s] = factor * forward;
        stage_b[s] = factor * backward;
      }
      ctx.dag.critical_path(stage_f, stage_b, ctx.p2p_forward_s, ctx.p2p_backward_s, scratch, counts);
      f.work += 2 * static_cast<std::int64_t>(ctx.dag.ops().size());
      f.pivots[t].push_back(
          Pivot{c, static_cast<double>(counts.forward_ops[t]), static_cast<double>(counts.backward_ops[t]),
                counts.forward_hops * problem.p2p_forward_s + counts.backward_hops * problem.p2p_backward_s});
      for (int s = 0; s < t; ++s) {
        f.alpha_forward[s] = std::min<double>(f.alpha_forward[s], counts.forward_ops[s]);
        f.alpha_backward[s] = std::min<double>(f.alpha_backward[s], counts.backward_ops[s]);
      }
      for (int s = t + 1; s < p; ++s) {
        beta_f[c][s] = std::min<double>(beta_f[c][s], counts.forward_ops[s]);
        beta_b[c][s] = std::min<double>(beta_b[c][s], counts.backward_ops[s]);
      }
    }
  }
  // The walks of bound (c): micro-batch 0's forward down to t, all of t's ops, the last
  // backward back up; nothing below t.
  const double round_trip_s = problem.p2p_forward_s + problem.p2p_backward_s;
  for (int t = 0; t < p; ++t) f.pivots[t].push_back(Pivot{shapes, 1.0 * m, 1.0 * m, t * round_trip_s});
  for (int s = 0; s + 1 < p; ++s) {
    f.alpha_forward[s] = std::min(f.alpha_forward[s], 1.0);
    f.alpha_backward[s] = std::min(f.alpha_backward[s], 1.0);
  }
  // No pivot lies after the last stage: its weight before a pivot never counts.
  f.alpha_forward[p - 1] = f.alpha_backward[p - 1] = 0;
  // Classes with the same weights after the pivot share one: fronts grow with the classes.
  std::vector<int> class_of(shapes + 1);
  std::vector<int> kept;  // the shapes that start a class
  for (int c = 0; c < shapes; ++c) {
    class_of[c] = static_cast<int>(kept.size());
    for (size_t k = 0; k < kept.size(); ++k) {
      if (beta_f[kept[k]] == beta_f[c] && beta_b[kept[k]] == beta_b[c]) {
        class_of[c] = static_cast<int>(k);
        break;
      }
    }
    if (class_of[c] == static_cast<int>(kept.size())) kept.push_back(c);
  }
  class_of[shapes] = static_cast<int>(kept.size());  // the walks: beta = 0
  f.classes = static_cast<int>(kept.size()) + 1;
  for (int s = 0; s < p; ++s) {
    for (size_t k = 0; k < kept.size(); ++k) {
      // No pivot before stage 0, and the weights of a stage no pivot precedes never count.
      f.beta_forward[s][k] = std::isinf(beta_f[kept[k]][s]) ? 0.0 : beta_f[kept[k]][s];
      f.beta_backward[s][k] = std::isinf(beta_b[kept[k]][s]) ? 0.0 : beta_b[kept[k]][s];
    }
    for (Pivot& pivot : f.pivots[s]) pivot.cls = class_of[pivot.cls];
  }
  return f;
}

bool PivotTables::reset(int units, int stages) {
  width_ = static_cast<size_t>(units) + 1;
  points_.clear();
  if (!active()) return false;
  offset_.assign(static_cast<size_t>(stages + 1) * width_, 0);
  count_.assign(offset_.size(), 0);
  floor_.assign(offset_.size(), kInf);
  return true;
}

std::int64_t PivotTables::keep_front(std::vector<Point>& candidates) {
  const int classes = families_->classes;
  std::sort(candidates.begin(), candidates.end(),
            [](const Point& a, const Point& b) { return a.lead < b.lead; });
  const size_t first = points_.size();
  std::int64_t compared = 0;
  for (const Point& c : candidates) {
    bool dominated = false;
    for (size_t q = first; q < points_.size() && !dominated; ++q) {
      ++compared;
      bool no_worse = true;
      for (int k = 0; k < classes && no_worse; ++k) no_worse = points_[q].by_class[k] <= c.by_class[k];
      dominated = no_worse;  // and its lead is no larger: sorted
    }
    if (dominated) continue;
    if (points_.size() - first < kMostFrontPoints) {
      points_.push_back(c);
    } else {
      Point& merged = points_.back();  // lead: already the least of those it stands for
      for (int k = 0; k < classes; ++k) merged.by_class[k] = std::min(merged.by_class[k], c.by_class[k]);
    }
  }
  return compared;
}

std::int64_t PivotTables::build_suffix(const PartitionProblem& problem, const PartitionContext& ctx,
                                       std::int64_t limit_bytes, double ceiling_s) {
  const int n = static_cast<int>(problem.units.size()), p = problem.stages;
  if (!reset(n, p)) return 0;
  const PivotFamilies& f = *families_;
  const int classes = f.classes;
  Point end_point;
  end_point.lead = -kInf;
  end_point.by_class.fill(0);
  offset_[cell(p, n)] = static_cast<std::uint32_t>(points_.size());
  count_[cell(p, n)] = 1;
  points_.push_back(end_point);
  std::int64_t work = 0;
  // Stage k holds [j, end); every later stage needs a unit.
  for (int k = p - 1; k >= 0; --k) {
    const int last_end = n - (p - k - 1);
    for (int j = k; j < last_end; ++j) {
      candidates_.clear();
      double& floor = floor_[cell(k, j)];
      const auto take = [&](int end, int, int, double forward_s, double backward_s) {
        const size_t next = cell(k + 1, end);
        floor = std::min(floor, floor_[next]);  // W only grows as stages are added
        const double alpha = f.alpha_forward[k] * forward_s + f.alpha_backward[k] * backward_s;
        for (std::uint32_t q = 0; q < count_[next]; ++q) {
          const Point& after = points_[offset_[next] + q];
          Point point;
          point.lead = alpha + after.lead;
          for (const PivotFamilies::Pivot& pivot : f.pivots[k]) {
            point.lead = std::max(point.lead, pivot.forward * forward_s + pivot.backward * backward_s +
                                                  pivot.hops_s + after.by_class[pivot.cls]);
          }
          if (point.lead > ceiling_s) {  // every bound from it is at least its W
            floor = std::min(floor, point.lead);
            continue;
          }
          for (int c = 0; c < classes; ++c) {
            point.by_class[c] =
                f.beta_forward[k][c] * forward_s + f.beta_backward[k][c] * backward_s + after.by_class[c];
          }
          candidates_.push_back(point);
        }
      };
      work += for_each_stage_from(problem, ctx, limit_bytes, k, j, last_end, take);
      work += static_cast<std::int64_t>(candidates_.size());
      offset_[cell(k, j)] = static_cast<std::uint32_t>(points_.size());
      work += keep_front(candidates_);
      count_[cell(k, j)] = static_cast<std::uint32_t>(points_.size() - offset_[cell(k, j)]);
    }
  }
  return charged(work);
}

std::int64_t PivotTables::build_prefix(const PartitionProblem& problem, const PartitionContext& ctx,
                                       std::int64_t limit_bytes, double ceiling_s) {
  const int n = static_cast<int>(problem.units.size()), p = problem.stages;
  if (!reset(n, p)) return 0;
  const PivotFamilies& f = *families_;
  const int classes = f.classes;
  Point start;
  start.lead = 0;
  start.by_class.fill(-kInf);
  offset_[cell(0, 0)] = 0;
  count_[cell(0, 0)] = 1;
  points_.push_back(start);
  std::int64_t work = 0;
  // Stage s = k - 1 holds [begin, j); every earlier stage needs a unit.
  for (int k = 1; k <= p; ++k) {
    const int s = k - 1;
    for (int j = k; j <= n - (p - k); ++j) {
      candidates_.clear();
      double& floor = floor_[cell(k, j)];
      const auto take = [&](int begin, int, int, double forward_s, double backward_s) {
        const size_t before = cell(s, begin);
        floor = std::min(floor, floor_[before]);  // every X_c only grows as stages are added
        const double alpha = f.alpha_forward[s] * forward_s + f.alpha_backward[s] * backward_s;
        for (std::uint32_t q = 0; q < count_[before]; ++q) {
          const Point& head = points_[offset_[before] + q];
          Point point;
          point.lead = head.lead + alpha;
          for (int c = 0; c < classes; ++c) {
            point.by_class[c] =
                head.by_class[c] + f.beta_forward[s][c] * forward_s + f.beta_backward[s][c] * backward_s;
          }
          for (const PivotFamilies::Pivot& pivot : f.pivots[s]) {
            point.by_class[pivot.cls] =
                std::max(point.by_class[pivot.cls],
                         head.lead + pivot.forward * forward_s + pivot.backward * backward_s + pivot.hops_s);
          }
          // Every bound from it is at least its largest X_c (the suffix's S_c are >= 0).
          const double key = *std::max_element(point.by_class.begin(), point.by_class.begin() + classes);
          if (key > ceiling_s) {
            floor = std::min(floor, key);
            continue;
          }
          candidates_.push_back(point);
        }
      };
      work += for_each_stage_to(problem, ctx, limit_bytes, s, j, take);
      work += static_cast<std::int64_t>(candidates_.size());
      offset_[cell(k, j)] = static_cast<std::uint32_t>(points_.size());
      work += keep_front(candidates_);
      count_[cell(k, j)] = static_cast<std::uint32_t>(points_.size() - offset_[cell(k, j)]);
    }
  }
  return charged(work);
}

PivotState PivotTables::after_prefix(const PivotState& prefix, int stage, double forward_s,
                                     double backward_s) const {
  const PivotFamilies& f = *families_;
  PivotState out;
  out.lead = prefix.lead + f.alpha_forward[stage] * forward_s + f.alpha_backward[stage] * backward_s;
  for (int c = 0; c < f.classes; ++c) {
    out.by_class[c] =
        prefix.by_class[c] + f.beta_forward[stage][c] * forward_s + f.beta_backward[stage][c] * backward_s;
  }
  for (const PivotFamilies::Pivot& pivot : f.pivots[stage]) {
    out.by_class[pivot.cls] =
        std::max(out.by_class[pivot.cls],
                 prefix.lead + pivot.forward * forward_s + pivot.backward * backward_s + pivot.hops_s);
  }
  return out;
}

PivotState PivotTables::before_suffix(const PivotState& suffix, int stage, double forward_s,
                                      double backward_s) const {
  const PivotFamilies& f = *families_;
  PivotState out;
  out.lead = f.alpha_forward[stage] * forward_s + f.alpha_backward[stage] * backward_s + suffix.lead;
  for (const PivotFamilies::Pivot& pivot : f.pivots[stage]) {
    out.lead = std::max(out.lead, pivot.forward * forward_s + pivot.backward * backward_s + pivot.hops_s +
                                      suffix.by_class[pivot.cls]);
  }
  for (int c = 0; c < f.classes; ++c) {
    out.by_class[c] =
        f.beta_forward[stage][c] * forward_s + f.beta_backward[stage][c] * backward_s + suffix.by_class[c];
  }
  return out;
}

// Both directions' bound is the least over the open stages' front of the largest term: a fixed
// prefix's (sum of alpha x, X_c) meets a suffix point's (W, S_c), or a fixed suffix's (W, S_c)
// meets a prefix point's (sum of alpha x, X_c), in the same two sums.
double PivotTables::least_largest_term(const PivotState& fixed, size_t at) const {
  if (!active()) return 0;
  double least = kInf;
  for (std::uint32_t q = 0; q < count_[at]; ++q) {
    const Point& open = points_[offset_[at] + q];
    double value = fixed.lead + open.lead;
    for (int c = 0; c < families_->classes; ++c)
      value = std::max(value, fixed.by_class[c] + open.by_class[c]);
    least = std::min(least, value);
  }
  return std::min(least, floor_[at]) * (1 - 1e-9);
}

double PivotTables::bound_after_prefix(const PivotState& prefix, int k, int j) const {
  return least_largest_term(prefix, cell(k, j));
}

double PivotTables::bound_before_suffix(const PivotState& suffix, int k, int j) const {
  return least_largest_term(suffix, cell(k, j));
}

}  // namespace pipescope::planner::detail
