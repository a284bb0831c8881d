#include "path_tables.h"

namespace pipescope::planner::detail {
namespace {

// Work charged for candidate stages: their sums and memory checks, then a multiply-add per set.
// Measured (BM_PathTables): six sets cost about what the candidate itself does.
std::int64_t candidates_work(std::int64_t candidates, int sets) { return candidates * (6 + sets) / 6; }

}  // namespace

void PathTables::set_weights(const std::vector<PathWeights>& sets) {
  sets_ = 0;
  forward_.clear();
  backward_.clear();
  std::vector<const PathWeights*> kept;
  for (const PathWeights& w : sets) {
    if (!w.empty() && static_cast<int>(kept.size()) < kMostWeightSets) kept.push_back(&w);
  }
  if (kept.empty()) return;
  sets_ = static_cast<int>(kept.size());
  const size_t stages = kept.front()->forward.size();
  forward_.assign(stages * sets_, 0.0);
  backward_.assign(stages * sets_, 0.0);
  for (int i = 0; i < sets_; ++i) {
    for (size_t s = 0; s < stages; ++s) {
      forward_[s * sets_ + i] = kept[i]->forward[s];
      backward_[s * sets_ + i] = kept[i]->backward[s];
    }
    hops_s_[i] = kept[i]->hops_s;
  }
}

bool PathTables::reset(int units, int stages) {
  width_ = static_cast<size_t>(units) + 1;
  if (!active()) {
    table_.clear();
    return false;
  }
  table_.assign(static_cast<size_t>(stages + 1) * width_ * sets_, kNoPlan);
  return true;
}

std::int64_t PathTables::build_suffix(const PartitionProblem& problem, const PartitionContext& ctx,
                                      std::int64_t limit_bytes) {
  const int n = static_cast<int>(problem.units.size()), p = problem.stages;
  if (!reset(n, p)) return 0;
  choice_.assign(static_cast<size_t>(p + 1) * width_, Choice{});
  std::fill_n(table_.begin() + static_cast<std::ptrdiff_t>(cell(p, n)), sets_, 0.0);
  std::int64_t candidates = 0;
  // Stage k holds [j, end); every later stage needs a unit.
  for (int k = p - 1; k >= 0; --k) {
    const int last_end = n - (p - k - 1);
    const double* wf = &forward_[static_cast<size_t>(k) * sets_];
    const double* wb = &backward_[static_cast<size_t>(k) * sets_];
    for (int j = k; j < last_end; ++j) {
      double* least = &table_[cell(k, j)];
      Choice& pick = choice_[static_cast<size_t>(k) * width_ + j];
      const auto take = [&](int end, int option, int partial, double forward_s, double backward_s) {
        const double* after = &table_[cell(k + 1, end)];
        if (after[0] == kNoPlan) return;  // feasibility does not depend on the weights
        if (wf[0] * forward_s + wb[0] * backward_s + after[0] < least[0]) pick = Choice{end, option, partial};
        for (int i = 0; i < sets_; ++i)
          least[i] = std::min(least[i], wf[i] * forward_s + wb[i] * backward_s + after[i]);
      };
      candidates += for_each_stage_from(problem, ctx, limit_bytes, k, j, last_end, take);
    }
  }
  return candidates_work(candidates, sets_);
}

std::int64_t PathTables::build_prefix(const PartitionProblem& problem, const PartitionContext& ctx,
                                      std::int64_t limit_bytes) {
  const int n = static_cast<int>(problem.units.size()), p = problem.stages;
  if (!reset(n, p)) return 0;
  std::fill_n(table_.begin(), sets_, 0.0);
  std::int64_t candidates = 0;
  // Stage s = k - 1 holds [begin, j); every earlier stage needs a unit.
  for (int k = 1; k <= p; ++k) {
    const int s = k - 1;
    const double* wf = &forward_[static_cast<size_t>(s) * sets_];
    const double* wb = &backward_[static_cast<size_t>(s) * sets_];
    for (int j = k; j <= n - (p - k); ++j) {
      double* least = &table_[cell(k, j)];
      const auto take = [&](int begin, int, int, double forward_s, double backward_s) {
        const double* before = &table_[cell(s, begin)];
        if (before[0] == kNoPlan) return;
        for (int i = 0; i < sets_; ++i)
          least[i] = std::min(least[i], before[i] + wf[i] * forward_s + wb[i] * backward_s);
      };
      candidates += for_each_stage_to(problem, ctx, limit_bytes, s, j, take);
    }
  }
  return candidates_work(candidates, sets_);
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
