#include "clock_reasons.h"

#include <cstdio>

namespace pipescope::benches {
namespace {

// nvml.h's nvmlClocksEventReason* / nvmlClocksThrottleReason* bits (the same values under both names).
struct Reason {
  uint64_t bit;
  const char* name;
  bool throttles;
};
constexpr Reason kReasons[] = {
    {0x1, "gpu_idle", false},
    {0x2, "applications_clocks_setting", false},
    {0x4, "sw_power_cap", true},
    {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},
    {0x20, "sw_thermal_slowdown", true},
    {0x40, "hw_thermal_slowdown", true},
    {0x80, "hw_power_brake_slowdown", true},
    {0x100, "display_clock_setting", false},
};

}  // namespace

std::string clock_event_reason_names(uint64_t mask) {
  if (mask == 0) return "none";
  std::string out;
  uint64_t known = 0;
  for (const Reason& r : kReasons) {
    known |= r.bit;
    if (mask & r.bit) out += (out.empty() ? "" : ",") + std::string(r.name);
  }
  if (const uint64_t rest = mask & ~known; rest != 0) {
    char text[32];
    std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(rest));
    out += (out.empty() ? "" : ",") + std::string(text);
  }
  return out;
}

bool clock_throttled(uint64_t mask) {
  for (const Reason& r : kReasons) {
    if (r.throttles && (mask & r.bit)) return true;
  }
  return false;
}

}  // namespace pipescope::benches
