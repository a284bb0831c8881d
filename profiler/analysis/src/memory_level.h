// One memory figure's level over a rank's run (memory_timeline.cpp): the running level, its peak and
// a bounded set of (time, level) checkpoints from which the level at any moment is read back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace pipescope::analysis {

struct MemoryLevel {
  int64_t level = 0;
  uint64_t peak_bytes = 0;
  int64_t peak_at_ns = 0;
  std::vector<std::pair<int64_t, uint64_t>> checkpoints;
  int64_t spacing_ns = 0;

  // Keeps at most 512 (time, level) points; when full, every other one goes, so the points
  // thin out evenly over the run.
  void add_checkpoint(int64_t t, uint64_t value) {
    if (!checkpoints.empty() && t - checkpoints.back().first < spacing_ns) {
      checkpoints.back().second = value;  // the latest level of this neighbourhood
      return;
    }
    checkpoints.emplace_back(t, value);
    if (checkpoints.size() >= 512) {
      size_t kept = 0;
      for (size_t i = 0; i < checkpoints.size(); i += 2) checkpoints[kept++] = checkpoints[i];
      checkpoints.resize(kept);
      spacing_ns = std::max<int64_t>(1, spacing_ns * 2);
    }
  }
};

}  // namespace pipescope::analysis
