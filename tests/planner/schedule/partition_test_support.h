// What the partition tests share: random instances with the trade-offs of real recompute
// options, and every plan of an instance, for brute force.
#pragma once

#include <random>
#include <vector>

#include "pipescope/planner/partition_plan.h"

namespace pipescope::planner::test {

struct Shape {
  int max_units, max_stages, max_micro_batches;
};

// Whole-second times and whole-byte memory, so that every sum is exact.
PartitionProblem random_problem(std::mt19937& rng, const Shape& shape);

// Every plan: each composition of the units into the stages, each allowed option per stage.
std::vector<PartitionPlan> all_plans(const PartitionProblem& problem);

// A partial plan as a key: stages [first, last) with their units, options and partial counts.
std::vector<int> stages_key(const PartitionPlan& plan, int first, int last);

}  // namespace pipescope::planner::test
