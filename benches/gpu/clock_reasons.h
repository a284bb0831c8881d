// Why a GPU runs below its maximum clock, as NVML reports it (nvmlDeviceGetCurrentClocksEventReasons,
// formerly ...ThrottleReasons): the bit mask in words, for the results' context and labels. Pure logic.
#pragma once

#include <cstdint>
#include <string>

namespace pipescope::benches {

// "none", or the reasons' names joined by ',' (e.g. "sw_power_cap,hw_thermal_slowdown"); bits
// nvml.h does not name show as hex.
std::string clock_event_reason_names(uint64_t mask);

// True when a reason other than idling or a clock someone set lowered the clock: a power cap,
// thermal or hardware slowdown. Measurements taken then understate the GPU.
bool clock_throttled(uint64_t mask);

}  // namespace pipescope::benches
