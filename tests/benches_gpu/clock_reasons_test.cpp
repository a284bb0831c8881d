#include "clock_reasons.h"

#include <gtest/gtest.h>

namespace pipescope::benches {
namespace {

TEST(ClockReasons, NamesNvmlsBits) {
  EXPECT_EQ(clock_event_reason_names(0), "none");
  EXPECT_EQ(clock_event_reason_names(0x1), "gpu_idle");
  // SW power cap (0x4) and HW thermal slowdown (0x40), as nvml.h defines them.
  EXPECT_EQ(clock_event_reason_names(0x44), "sw_power_cap,hw_thermal_slowdown");
  EXPECT_EQ(clock_event_reason_names(0x8000000000000001ull), "gpu_idle,0x8000000000000000");
}

TEST(ClockReasons, IdleAndSetClocksAreNotThrottling) {
  EXPECT_FALSE(clock_throttled(0x1 | 0x2 | 0x10 | 0x100));
  for (uint64_t bit : {0x4ull, 0x8ull, 0x20ull, 0x40ull, 0x80ull}) EXPECT_TRUE(clock_throttled(bit)) << bit;
}

}  // namespace
}  // namespace pipescope::benches
