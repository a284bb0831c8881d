// hbm/<copy|scale|add|norm>/bytes: (memory-bound kernels) and memcpy/<h2d|d2h|d2d>/bytes:
// (cudaMemcpyAsync), docs/calibration-results.md.
#pragma once

namespace pipescope::benches {

// 1 MiB .. 1 GiB per operand (quick: x4 steps); RMSNorm over rows of 4096 and 8192 elements.
void register_hbm_benchmarks(bool quick);

// 4 KiB .. 1 GiB (quick: x4 steps), host memory pinned.
void register_memcpy_benchmarks(bool quick);

}  // namespace pipescope::benches
