// The meeting point of ordinary writers and a fatal-signal handler (emergency_gate.h): whoever
// comes second backs off (ordinary code) or waits, bounded (the handler).
#include "pipescope/trace/emergency_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace pipescope::trace {
namespace {

TEST(EmergencyGate, OrdinaryCodeBacksOffWhileAHandlerHoldsIt) {
  EmergencyGate gate;
  ASSERT_TRUE(gate.claim(0));
  EXPECT_FALSE(gate.enter());
  EXPECT_FALSE(gate.claim(0));  // one handler at a time
  gate.release();
  EXPECT_TRUE(gate.enter());
  gate.leave();
}

TEST(EmergencyGate, AHandlerWaitsForOrdinaryCodeToLeaveAndGivesUpWhenItStays) {
  EmergencyGate gate;
  ASSERT_TRUE(gate.enter());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(gate.claim(20));  // the interrupted thread itself may be inside: bounded
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
  EXPECT_FALSE(gate.claimed());  // a failed claim leaves nothing behind
  std::thread leaver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gate.leave();
  });
  EXPECT_TRUE(gate.claim(5'000));
  leaver.join();
  gate.release();
}

// Many ordinary threads entering and leaving while a handler claims: never both inside.
TEST(EmergencyGate, NeverLetsBothSidesInAtOnce) {
  EmergencyGate gate;
  std::atomic<int> inside{0};
  std::atomic<bool> stop{false}, overlap{false};
  std::thread ordinary([&] {
    while (!stop.load()) {
      if (!gate.enter()) continue;
      if (inside.fetch_add(1) != 0) overlap = true;
      inside.fetch_sub(1);
      gate.leave();
    }
  });
  for (int i = 0; i < 2'000; ++i) {
    if (!gate.claim(100)) continue;
    if (inside.fetch_add(1) != 0) overlap = true;
    inside.fetch_sub(1);
    gate.release();
  }
  stop = true;
  ordinary.join();
  EXPECT_FALSE(overlap.load());
}

}  // namespace
}  // namespace pipescope::trace
