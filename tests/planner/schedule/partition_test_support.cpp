#include "partition_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace pipescope::planner::test {

// Three options with the trade-off of none / selective / full recomputation: each keeps less
// and recomputes more. Sometimes only a random subset is allowed.
PartitionProblem random_problem(std::mt19937& rng, const Shape& shape) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  PartitionProblem problem;
  const int n = pick(1, shape.max_units);
  const int options = pick(1, 3);
  // Sometimes an optimizer step with working memory of its own, at times the fuller phase.
  const int max_step_bytes = pick(0, 2) == 0 ? 60 : 0;
  for (int u = 0; u < n; ++u) {
    PartitionUnit unit{"u" + std::to_string(u), pick(0, 40), {}};
    unit.step_bytes = pick(0, max_step_bytes);
    const int f = pick(1, 6);
    int b = pick(f, 3 * f);
    int activation = pick(1, 30);
    int transient = pick(0, 5);
    for (int r = 0; r < options; ++r) {
      unit.options.push_back({static_cast<double>(f), static_cast<double>(b), activation, transient});
      b += pick(0, f);
      activation = pick(0, activation);
      transient += pick(0, 10);
    }
    problem.units.push_back(unit);
  }
  problem.stages = pick(1, std::min(n, shape.max_stages));
  problem.micro_batches = pick(1, shape.max_micro_batches);
  problem.schedule = pick(0, 3) == 0 ? ScheduleKind::kGPipe : ScheduleKind::kOneFOneB;
  if (pick(0, 1)) {
    for (int s = 0; s < problem.stages; ++s) problem.stage_extra_bytes.push_back(pick(0, 20));
  }
  if (pick(0, 2) == 0) {
    problem.p2p_forward_s = pick(0, 2);
    problem.p2p_backward_s = pick(0, 2);
  }
  if (options > 1 && pick(0, 2) == 0) {
    problem.allowed_options = {pick(0, options - 1)};
  } else if (options > 1 && pick(0, 1) == 0) {
    // Recompute the first k units of a stage with the last option, the rest with the first
    // (options here only get slower and keep less, as the partial option requires).
    problem.partial_option = options - 1;
    problem.partial_base = 0;
  }
  problem.capacity_bytes = pick(20, 400);  // from nothing fits to everything fits
  problem.balance = pick(0, 1) ? Balance::kMemory : Balance::kTime;
  problem.time_slack = pick(0, 3) * 0.05;
  problem.uniform_layout = {pick(0, 1) == 1, pick(0, 1) == 1};
  return problem;
}

std::vector<PartitionPlan> all_plans(const PartitionProblem& problem) {
  const int n = static_cast<int>(problem.units.size());
  const int p = problem.stages;
  std::vector<int> options = problem.allowed_options;
  if (options.empty()) {
    for (int r = 0; r < static_cast<int>(problem.units[0].options.size()); ++r) options.push_back(r);
  }
  std::vector<PartitionPlan> plans;
  PlanChoice choice{std::vector<int>(p + 1, 0), std::vector<int>(p, 0), {}};
  if (problem.partial_option >= 0) choice.partial_units.assign(p, 0);
  choice.boundaries[p] = n;
  // Per stage: every allowed option on all its units, and the partial option on its first k units
  // for every k from 1 to all but one (all is the plain option, none the base).
  std::vector<std::vector<std::pair<int, int>>> stage_choices(p);
  std::vector<size_t> pick(p, 0);
  // Recursion over cut points, then an odometer over each stage's choices.
  auto cuts = [&](auto&& self, int s) -> void {
    if (s == p) {
      for (int i = 0; i < p; ++i) {
        stage_choices[i].clear();
        for (int r : options) stage_choices[i].push_back({r, 0});
        const int units = choice.boundaries[i + 1] - choice.boundaries[i];
        for (int k = 1; problem.partial_option >= 0 && k < units; ++k) {
          stage_choices[i].push_back({problem.partial_option, k});
        }
      }
      std::fill(pick.begin(), pick.end(), 0);
      while (true) {
        for (int i = 0; i < p; ++i) {
          choice.options[i] = stage_choices[i][pick[i]].first;
          if (!choice.partial_units.empty()) choice.partial_units[i] = stage_choices[i][pick[i]].second;
        }
        auto plan = evaluate_plan(problem, choice);
        EXPECT_TRUE(plan.ok()) << plan.error().message;
        if (plan.ok()) plans.push_back(*plan);
        int i = 0;
        while (i < p && ++pick[i] == stage_choices[i].size()) pick[i++] = 0;
        if (i == p) return;
      }
    }
    const int first = choice.boundaries[s];
    const int last_end = s == p - 1 ? n : n - (p - s - 1);
    for (int end = s == p - 1 ? n : first + 1; end <= last_end; ++end) {
      choice.boundaries[s + 1] = end;
      self(self, s + 1);
    }
  };
  cuts(cuts, 0);
  return plans;
}

std::vector<int> stages_key(const PartitionPlan& plan, int first, int last) {
  std::vector<int> key{first, last};
  for (int s = first; s < last; ++s) {
    const StagePlan& stage = plan.stages[s];
    key.insert(key.end(), {stage.first_unit, stage.end_unit, stage.option, stage.partial_units});
  }
  return key;
}

}  // namespace pipescope::planner::test
