// Plan inputs built from the bundled models, clusters and profiles, for the planner's tests.
#pragma once

#include <string>

#include "pipescope/planner/plan.h"

namespace pipescope::planner::test {

// Fails the test (and returns empty inputs) when a bundled piece does not load or the config
// does not resolve.
PlanInputs inputs(const std::string& model, const std::string& cluster, ParallelConfig config);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace pipescope::planner::test
