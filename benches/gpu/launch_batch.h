// How many launches a timed iteration batches, and what minimum time that asks of Google
// Benchmark: pure arithmetic, tested without a GPU (tests/benches_gpu/launch_batch_test.cpp).
#pragma once

#include <algorithm>

namespace pipescope::benches {

// Launches per iteration so that one iteration carries about `target` units of work (FLOPs,
// bytes), 1 to 100: a batch of tiny launches hides the event overhead.
inline int batch_for(double work_per_launch, double target) {
  if (work_per_launch <= 0) return 1;
  return static_cast<int>(std::clamp(target / work_per_launch, 1.0, 100.0));
}

// Google Benchmark stops at a minimum of *measured* time, and a batched iteration reports the
// time of one of its `batch` launches: to keep the GPU busy for about `gpu_seconds`, ask for
// 1/batch of that (else a benchmark of 100 launches per iteration runs 100 times too long).
inline double min_time_for_batch(double gpu_seconds, int batch) { return gpu_seconds / std::max(batch, 1); }

}  // namespace pipescope::benches
