// The partition optimizer's fixture at the size the planner issue asks for: a 175B-class GPT's
// layers at tp 8 (the numbers only need the right shape of trade-offs, not a source): a layer
// runs 10 ms forward and 20 ms backward; selective recompute adds 1.5 ms and keeps 300 MB instead
// of 800 MB, full recompute adds a forward and keeps the 50 MB layer input plus an 800 MB
// transient; 2.5 GB of static state per layer, 2 GB more per stage, 76 GB usable per GPU, 128
// micro-batches. Shared by benches/cpu/partition_benchmark.cpp and the optimizer's tests.
#pragma once

#include "pipescope/planner/partition_plan.h"

namespace pipescope::planner::fixtures {

// `layers` layers plus embedding and head on `stages` stages; p2p_s each way per boundary.
PartitionProblem gpt_partition_problem(int layers, int stages, Balance balance, double p2p_s);

}  // namespace pipescope::planner::fixtures
