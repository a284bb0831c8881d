// launch/gap/bytes:B (docs/calibration-results.md): what launching kernels one at a time from the
// host costs beside the same kernels replayed from a CUDA graph: the GPU's idle time per kernel
// launched, as a framework that launches per operator (eager PyTorch) pays it.
#pragma once

namespace pipescope::benches {

// Registers an empty kernel and copies of 1 MiB and 16 MiB, each launched 1,000 times in a row.
void register_launch_benchmarks();

}  // namespace pipescope::benches
