// interference/<gemm|memory>/.../sms:N/pause_ns:P (docs/calibration-results.md): how much a GEMM and a
// memory-bound kernel slow down while a communication-like kernel holds N SMs and streams HBM
// beside them, as NCCL's kernels do when a plan overlaps communication with compute.
#pragma once

#include <array>

namespace pipescope::benches {

// NCCL runs one block, on one SM, per channel of a collective; these are the held SMs measured.
inline constexpr std::array<int, 3> kInterferenceSms = {8, 16, 32};
// Pauses after each MiB a held SM copies: none (as much memory traffic as the SMs can make), and
// two that leave it a fraction of that, nearer what a collective across nodes makes.
inline constexpr std::array<unsigned, 3> kInterferencePausesNs = {0, 40000, 400000};

// Registers a bf16 GEMM of 8192^3 and of 4096^3 and a 1 GiB copy, each timed alone and beside a
// background copy on each of kInterferenceSms SMs at each of kInterferencePausesNs.
void register_interference_benchmarks();

}  // namespace pipescope::benches
