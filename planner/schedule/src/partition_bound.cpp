#include "partition_bound.h"

#include <algorithm>

namespace pipescope::planner::detail {
namespace {

// Paths kept at most: the master LP grows with them.
constexpr std::size_t kMostPaths = 200;

}  // namespace

PathBound::PathBound(const PartitionProblem& problem, const PartitionContext& ctx)
    : problem_(problem), ctx_(ctx), n_(static_cast<int>(problem.units.size())), p_(problem.stages) {}

void PathBound::add_path(const std::vector<double>& forward_s, const std::vector<double>& backward_s) {
  work_ += 2 * static_cast<std::int64_t>(ctx_.dag.ops().size());
  ctx_.dag.critical_path(forward_s, backward_s, ctx_.p2p_forward_s, ctx_.p2p_backward_s, scratch_, counts_);
  Path path;
  path.forward_ops.assign(counts_.forward_ops.begin(), counts_.forward_ops.end());
  path.backward_ops.assign(counts_.backward_ops.begin(), counts_.backward_ops.end());
  path.hops_s =
      counts_.forward_hops * problem_.p2p_forward_s + counts_.backward_hops * problem_.p2p_backward_s;
  for (const Path& known : paths_) {
    if (known.forward_ops == path.forward_ops && known.backward_ops == path.backward_ops &&
        known.hops_s == path.hops_s) {
      return;
    }
  }
  if (paths_.size() == kMostPaths) return;
  for (size_t x = 0; x < lengths_.size(); ++x)
    lengths_[x].push_back(length(path, plan_forward_s_[x], plan_backward_s_[x]));
  paths_.push_back(std::move(path));
}

double PathBound::length(const Path& path, const std::vector<double>& forward_s,
                         const std::vector<double>& backward_s) const {
  double total = path.hops_s;
  for (int s = 0; s < p_; ++s)
    total += path.forward_ops[s] * forward_s[s] + path.backward_ops[s] * backward_s[s];
  return total;
}

void PathBound::add_row(const std::vector<double>& forward_s, const std::vector<double>& backward_s) {
  plan_forward_s_.push_back(forward_s);
  plan_backward_s_.push_back(backward_s);
  std::vector<double> row;
  row.reserve(paths_.size());
  for (const Path& path : paths_) row.push_back(length(path, forward_s, backward_s));
  lengths_.push_back(std::move(row));
}

double PathBound::weighted_least(std::int64_t limit_bytes, const PathWeights& weights,
                                 std::vector<double>& forward_s, std::vector<double>& backward_s) {
  tables_.set_weights(weights);
  work_ += tables_.build_suffix(problem_, ctx_, limit_bytes);
  const double least = tables_.open_s(0, 0, 0);
  if (least != kNoPlan) tables_.least_plan(problem_, ctx_, forward_s, backward_s);
  return least;
}

double PathBound::lower_bound(std::int64_t limit_bytes, int rounds, std::int64_t* work_used) {
  work_ = 0;
  double bound = 0;
  plan_forward_s_.clear();
  plan_backward_s_.clear();
  lengths_.clear();
  std::vector<double> lambda(paths_.size(), paths_.empty() ? 0.0 : 1.0 / static_cast<double>(paths_.size()));
  PathWeights weights;
  std::vector<double> forward_s, backward_s;
  best_weights_ = PathWeights{};
  best_lambda_.clear();
  for (int round = 0; round < rounds && !paths_.empty(); ++round) {
    // The current combination, minimized over the plans: a valid bound whatever the weights.
    weights.forward.assign(static_cast<size_t>(p_), 0.0);
    weights.backward.assign(static_cast<size_t>(p_), 0.0);
    weights.hops_s = 0;
    for (size_t q = 0; q < lambda.size(); ++q) {
      if (lambda[q] <= 0) continue;
      for (int s = 0; s < p_; ++s) {
        weights.forward[s] += lambda[q] * paths_[q].forward_ops[s];
        weights.backward[s] += lambda[q] * paths_[q].backward_ops[s];
      }
      weights.hops_s += lambda[q] * paths_[q].hops_s;
    }
    const double least = weighted_least(limit_bytes, weights, forward_s, backward_s);
    if (least == kNoPlan) {
      bound = kNoPlan;
      break;
    }
    if (best_weights_.empty() || least + weights.hops_s > bound) {
      best_weights_ = weights;
      best_lambda_ = lambda;
    }
    bound = std::max(bound, least + weights.hops_s);
    add_row(forward_s, backward_s);
    add_path(forward_s, backward_s);
    // The master: the combination of known paths whose least over the known plans is largest.
    const int paths = static_cast<int>(paths_.size()), plans = static_cast<int>(lengths_.size());
    master_.rows = plans + 1;
    master_.cols = paths + 1;  // the weights, then z
    master_.a.assign(static_cast<size_t>(master_.rows) * master_.cols, 0.0);
    master_.b.assign(static_cast<size_t>(master_.rows), 0.0);
    master_.c.assign(static_cast<size_t>(master_.cols), 0.0);
    master_.c[paths] = 1;
    for (int x = 0; x < plans; ++x) {  // z <= sum_q lambda_q length(x, q)
      for (int q = 0; q < paths; ++q) master_.a[static_cast<size_t>(x) * master_.cols + q] = -lengths_[x][q];
      master_.a[static_cast<size_t>(x) * master_.cols + paths] = 1;
    }
    for (int q = 0; q < paths; ++q) master_.a[static_cast<size_t>(plans) * master_.cols + q] = 1;
    master_.b[plans] = 1;  // sum_q lambda_q <= 1
    const LpSolution solution = lp_.solve(master_);
    work_ += solution.work / 5;  // a tableau update costs about a fifth of a timed operation
    if (!solution.optimal) break;
    lambda.assign(solution.y.begin(), solution.y.begin() + paths);
    keep_a_combination(lambda);
    if (solution.value <= bound * (1 + 1e-9)) break;  // no combination of these paths does better
    // The plans the LP weighs, averaged: its critical path is the one the combination misses.
    double weight = 0;
    std::vector<double> average_forward(static_cast<size_t>(p_), 0.0),
        average_backward(static_cast<size_t>(p_), 0.0);
    for (int x = 0; x < plans; ++x) {
      const double mu = solution.dual[x];
      if (mu <= 0) continue;
      weight += mu;
      for (int s = 0; s < p_; ++s) {
        average_forward[s] += mu * plan_forward_s_[x][s];
        average_backward[s] += mu * plan_backward_s_[x][s];
      }
    }
    if (weight > 0) {
      for (int s = 0; s < p_; ++s) {
        average_forward[s] /= weight;
        average_backward[s] /= weight;
      }
      add_path(average_forward, average_backward);
    }
  }
  if (work_used != nullptr) *work_used = work_;
  // The DP sums with prefix sums for the partial option: allow for their rounding.
  return bound == kNoPlan ? kNoPlan : bound * (1 - 1e-9);
}

std::vector<PathWeights> PathBound::weight_sets(int most) const {
  std::vector<PathWeights> sets;
  if (best_weights_.empty() || most <= 0) return sets;
  sets.push_back(best_weights_);
  std::vector<size_t> order;
  for (size_t q = 0; q < best_lambda_.size(); ++q)
    if (best_lambda_[q] > 0) order.push_back(q);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return best_lambda_[a] > best_lambda_[b]; });
  for (size_t q : order) {
    if (static_cast<int>(sets.size()) == most) break;
    sets.push_back(PathWeights{paths_[q].forward_ops, paths_[q].backward_ops, paths_[q].hops_s});
  }
  return sets;
}

}  // namespace pipescope::planner::detail
