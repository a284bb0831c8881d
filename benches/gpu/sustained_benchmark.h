// sustained/gemm/m:/n:/k: (docs/calibration-results.md): what a GEMM achieves when the GPU has
// run it without a break long enough for its clocks, power and temperature to settle, against
// the first moments after an idle GPU starts it; NVML's clocks, power and clock-event reasons
// recorded beside both. Training runs at the former; a short benchmark measures the latter.
#pragma once

namespace pipescope::benches {

// How long the GEMM runs: PIPESCOPE_SUSTAINED_SECONDS, else 60 s (quick: 30 s).
double sustained_seconds(bool quick);

// Registers a bf16 GEMM of 8192^3 run for sustained_seconds(quick).
void register_sustained_benchmark(bool quick);

}  // namespace pipescope::benches
