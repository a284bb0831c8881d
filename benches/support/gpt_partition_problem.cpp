#include "gpt_partition_problem.h"

#include <cstdint>

namespace pipescope::planner::fixtures {

PartitionProblem gpt_partition_problem(int layers, int stages, Balance balance, double p2p_s) {
  constexpr std::int64_t kMB = 1'000'000;
  PartitionProblem problem;
  problem.units.push_back(
      {"embedding",
       1400 * kMB,
       {{0.002, 0.004, 50 * kMB, 0}, {0.002, 0.004, 50 * kMB, 0}, {0.002, 0.004, 50 * kMB, 0}}});
  for (int l = 0; l < layers; ++l) {
    problem.units.push_back(
        {"layer",
         2500 * kMB,
         {{0.010, 0.020, 800 * kMB, 0}, {0.010, 0.0215, 300 * kMB, 0}, {0.010, 0.030, 50 * kMB, 800 * kMB}}});
  }
  problem.units.push_back(
      {"head",
       1400 * kMB,
       {{0.008, 0.016, 600 * kMB, 0}, {0.008, 0.016, 600 * kMB, 0}, {0.008, 0.024, 50 * kMB, 600 * kMB}}});
  problem.stages = stages;
  problem.micro_batches = 128;
  problem.stage_extra_bytes.assign(stages, 2000 * kMB);
  problem.capacity_bytes = 76'000 * kMB;
  problem.p2p_forward_s = p2p_s;
  problem.p2p_backward_s = p2p_s;
  problem.balance = balance;
  return problem;
}

}  // namespace pipescope::planner::fixtures
