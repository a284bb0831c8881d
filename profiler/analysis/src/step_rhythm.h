// Steps from the rhythm of a data-parallel communicator's collectives, for runs without NVTX
// step ranges: gradient reductions come in a burst at the end of every step, so the long gaps
// between bursts separate steps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pipescope::analysis {

// Start times of the steps seen in `enters_ns` (sorted host entry times of one rank's
// collectives on one communicator): a call after a gap more than 4x the median gap starts a
// step; when no gap stands out (one call per step), every call does. Fewer than 3 calls: none.
std::vector<int64_t> step_starts_from_rhythm(std::span<const int64_t> enters_ns);

}  // namespace pipescope::analysis
