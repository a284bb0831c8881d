// The GPU's clocks, power, temperature and clock-event reasons while it works, as a benchmark
// entry (docs/calibration-results.md, family `device`): the context holds them at the start,
// when the GPU idles; these show them after a warm-up and at the end of the run, where a power
// cap or thermal slowdown would have lowered what the other benchmarks measured.
#pragma once

namespace pipescope::benches {

// Registers "device/state/at:<at>": about a second of memory-bound load, then NVML read while a
// further half second of it runs. Register "warm" before the other benchmarks and "end" after.
void register_device_state_benchmark(const char* at);

}  // namespace pipescope::benches
