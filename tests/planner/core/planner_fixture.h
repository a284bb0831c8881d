// Plan inputs built from the bundled models, clusters and profiles, for the planner's tests.
#pragma once

#include <cstdint>
#include <string>

#include "pipescope/planner/eager_kernels.h"
#include "pipescope/planner/plan.h"

namespace pipescope::planner::test {

// Fails the test (and returns empty inputs) when a bundled piece does not load or the config
// does not resolve.
PlanInputs inputs(const std::string& model, const std::string& cluster, ParallelConfig config);

// Data parallelism alone on 8 GPUs, with ZeRO `zero_stage` sharded over `shard` of them (0: all).
ParallelConfig data_parallel_8(int zero_stage = 0, int64_t shard = 0);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A decoder layer small enough to count its kernels' bytes by hand: 1,000 tokens, hidden 100,
// Q and K/V 100 wide, FFN 300 (SwiGLU, rotary, no dropout).
eager::LayerShape small_layer_shape();

}  // namespace pipescope::planner::test
