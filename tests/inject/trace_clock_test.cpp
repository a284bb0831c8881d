// The trace clock: the line fitted to CLOCK_MONOTONIC (against simulated clocks, exactly), and the
// process's clock on this machine's TSC where the kernel reads it too (skipped elsewhere).
#include "trace_clock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace tc = pipescope::inject::trace_clock;

namespace {

constexpr double kTicksPerNs = 2.6;  // a 2.6 GHz TSC
constexpr uint64_t kSecond = 1'000'000'000;

// A kernel clock that counts ns from a TSC at a rate that may change: piecewise linear.
struct KernelClock {
  double ns_per_tick = 1.0 / kTicksPerNs;
  double ns = 1'000'000'000'000.0;  // at `ticks`
  uint64_t ticks = 5'000'000'000'000;

  // Moves both on by `ns_later` of the kernel's time.
  void advance(double ns_later) {
    ns += ns_later;
    ticks += static_cast<uint64_t>(std::llround(ns_later / ns_per_tick));
  }
  tc::Anchor anchor(int64_t jitter_ns = 0) const {
    return tc::Anchor{ticks, static_cast<uint64_t>(std::llround(ns)) + static_cast<uint64_t>(jitter_ns)};
  }
  double at(uint64_t other_ticks) const {
    return ns + static_cast<double>(static_cast<int64_t>(other_ticks - ticks)) * ns_per_tick;
  }
};

double error_ns(const tc::Line& line, const KernelClock& kernel, uint64_t ticks) {
  return static_cast<double>(line.at(ticks)) - kernel.at(ticks);
}

TEST(TraceClockLine, TheFirstFitPassesThroughTheAnchorAtTheMeasuredRate) {
  KernelClock kernel;
  const tc::Anchor first = kernel.anchor();
  kernel.advance(20e6);
  const tc::Anchor second = kernel.anchor();
  const tc::Line line = tc::next_line(tc::Line{}, first, second, 200'000'000);
  ASSERT_NE(line.slope_q32, 0u);
  EXPECT_EQ(line.base_ticks, second.ticks);
  EXPECT_EQ(line.base_ns, second.ns);
  EXPECT_NEAR(std::ldexp(static_cast<double>(line.slope_q32), -32), 1.0 / kTicksPerNs, 1e-9);
  // Exact a second on, and before the base too (a read may take its ticks before the line's).
  EXPECT_NEAR(error_ns(line, kernel, second.ticks + static_cast<uint64_t>(kTicksPerNs * kSecond)), 0.0, 2.0);
  EXPECT_NEAR(error_ns(line, kernel, second.ticks - 2600), 0.0, 2.0);
  EXPECT_LT(line.at(second.ticks - 2600), line.base_ns);
  // Stale four seconds on.
  EXPECT_NEAR(static_cast<double>(line.until_ticks - second.ticks) / kTicksPerNs,
              static_cast<double>(tc::kStaleAfterNs), 1e3);
}

TEST(TraceClockLine, ASlewNeverStepsAndMeetsTheKernelClockAtTheNextFit) {
  KernelClock kernel;
  const tc::Anchor first = kernel.anchor();
  kernel.advance(1e9);
  // The line in use runs 3 us behind the kernel at this anchor.
  tc::Line current = tc::next_line(tc::Line{}, first, kernel.anchor(), kSecond);
  kernel.advance(1e9);
  current.base_ns -= 3'000;
  const tc::Anchor now = kernel.anchor();
  const tc::Line next = tc::next_line(current, first, now, kSecond);
  EXPECT_EQ(next.at(now.ticks), current.at(now.ticks));  // continuous: no step
  EXPECT_NEAR(error_ns(next, kernel, now.ticks), -3'000.0, 1.0);
  EXPECT_NEAR(error_ns(next, kernel, now.ticks + static_cast<uint64_t>(kTicksPerNs * kSecond)), 0.0, 2.0);
  EXPECT_GT(next.slope_q32, current.slope_q32);  // it catches up
  // Ahead instead: it slows down, never goes back.
  tc::Line ahead = current;
  ahead.base_ns += 6'000;
  const tc::Line slower = tc::next_line(ahead, first, now, kSecond);
  EXPECT_EQ(slower.at(now.ticks), ahead.at(now.ticks));
  EXPECT_LT(slower.slope_q32, ahead.slope_q32);
  EXPECT_NEAR(error_ns(slower, kernel, now.ticks + static_cast<uint64_t>(kTicksPerNs * kSecond)), 0.0, 2.0);
}

TEST(TraceClockLine, FarAheadItSlowsToNoLessThanHalfTheRateAndFarBehindItRestarts) {
  KernelClock kernel;
  const tc::Anchor first = kernel.anchor();
  kernel.advance(1e9);
  const tc::Anchor now = kernel.anchor();
  const tc::Line fitted = tc::next_line(tc::Line{}, first, now, kSecond);

  tc::Line ahead = fitted;
  ahead.base_ns += 800'000'000;  // 0.8 s ahead: a slew within a second would need a fifth of the rate
  const tc::Line slowed = tc::next_line(ahead, first, now, kSecond);
  EXPECT_EQ(slowed.at(now.ticks), ahead.at(now.ticks));
  EXPECT_NEAR(static_cast<double>(slowed.slope_q32), static_cast<double>(fitted.slope_q32) / 2, 2.0);

  tc::Line behind = fitted;
  behind.base_ns -= 2'000'000;  // 2 ms behind: past kMaxSlewNs, restarted at the anchor (forward)
  const tc::Line restarted = tc::next_line(behind, first, now, kSecond);
  EXPECT_EQ(restarted.base_ns, now.ns);
  EXPECT_EQ(restarted.slope_q32, fitted.slope_q32);
}

TEST(TraceClockLine, AStaleLineIsNotContinuedButRestartedAtTheAnchor) {
  KernelClock kernel;
  const tc::Anchor first = kernel.anchor();
  kernel.advance(1e9);
  tc::Line stale = tc::next_line(tc::Line{}, first, kernel.anchor(), kSecond);
  stale.base_ns -= 500;  // reads went to clock_gettime once it went stale: continuing it would step
  kernel.advance(5e9);
  const tc::Anchor now = kernel.anchor();
  ASSERT_GE(now.ticks, stale.until_ticks);
  const tc::Line next = tc::next_line(stale, first, now, kSecond);
  EXPECT_EQ(next.base_ns, now.ns);
}

TEST(TraceClockLine, AnchorsThatGoBackwardsGiveNoLine) {
  const tc::Anchor first{1'000'000, 5'000'000};
  EXPECT_EQ(tc::next_line(tc::Line{}, first, tc::Anchor{999'999, 6'000'000}, kSecond).slope_q32, 0u);
  EXPECT_EQ(tc::next_line(tc::Line{}, first, tc::Anchor{2'000'000, 5'000'000}, kSecond).slope_q32, 0u);
  EXPECT_EQ(tc::next_line(tc::Line{}, first, first, kSecond).slope_q32, 0u);
}

// A day of fits as the flusher makes them (20 ms, 200 ms, then every second), each anchor off by up
// to 12 ns, the kernel's rate steered by NTP (every 64 s, as chrony polls, a change of 0.1 ppm
// typically): the clock never goes back, and after its first second it stays within 500 ns of the
// kernel's (a change of the rate shows until the next fit), within 25 ns half the time.
TEST(TraceClockLine, FollowsAKernelClockThatNtpSteers) {
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int64_t> jitter(-12, 12);
  std::normal_distribution<double> steer(0.0, 0.1e-6);
  KernelClock kernel;
  tc::Anchor previous = kernel.anchor(jitter(random));
  tc::Line line;
  const uint64_t intervals[] = {20'000'000, 200'000'000};
  std::vector<double> settled;
  double worst_early = 0;
  uint64_t last_read = 0;
  for (int fit = 0; fit < 86'400; ++fit) {
    const uint64_t interval = fit < 2 ? intervals[fit] : kSecond;
    const uint64_t next_interval = fit + 1 < 2 ? intervals[fit + 1] : kSecond;
    // Reads across the interval, each checked against the kernel clock and the read before it.
    for (int step = 1; step <= 4 && line.slope_q32 != 0; ++step) {
      KernelClock probe = kernel;
      probe.advance(static_cast<double>(interval) * step / 4);
      const uint64_t read = line.at(probe.ticks);
      ASSERT_GE(read, last_read) << "fit " << fit;
      last_read = read;
      const double error = std::abs(error_ns(line, probe, probe.ticks));
      if (fit < 3) {
        worst_early = std::max(worst_early, error);
      } else {
        settled.push_back(error);
      }
    }
    kernel.advance(static_cast<double>(interval));
    if (fit % 64 == 63) kernel.ns_per_tick *= 1.0 + steer(random);
    const tc::Anchor now = kernel.anchor(jitter(random));
    const tc::Line next = tc::next_line(line, previous, now, next_interval);
    ASSERT_NE(next.slope_q32, 0u);
    if (line.slope_q32 != 0) {
      ASSERT_GE(next.at(now.ticks), line.at(now.ticks)) << "fit " << fit;
    }
    line = next;
    previous = now;
  }
  std::sort(settled.begin(), settled.end());
  EXPECT_LT(settled.back(), 500.0);
  EXPECT_LT(settled[settled.size() / 2], 25.0);
  EXPECT_LT(worst_early, 1'000.0);
  std::printf(
      "trace clock against a steered kernel clock: median %.1f ns, worst %.1f ns (first second %.1f)\n",
      settled[settled.size() / 2], settled.back(), worst_early);
}

// After a sudden change of 500 ppm (the most adjtimex allows) in the middle of an interval, the
// error is back under a microsecond two fits later.
TEST(TraceClockLine, RecoversFromASuddenRateChange) {
  KernelClock kernel;
  tc::Anchor previous = kernel.anchor();
  tc::Line line;
  std::vector<double> errors;  // at fits 1 to 7
  for (int fit = 0; fit < 8; ++fit) {
    kernel.advance(0.5e9);
    if (fit == 3) kernel.ns_per_tick *= 1.0 + 500e-6;
    kernel.advance(0.5e9);
    const tc::Anchor now = kernel.anchor();
    if (line.slope_q32 != 0) errors.push_back(std::abs(error_ns(line, kernel, now.ticks)));
    line = tc::next_line(line, previous, now, kSecond);
    previous = now;
  }
  ASSERT_EQ(errors.size(), 7u);
  EXPECT_LT(errors[1], 2.0);
  EXPECT_GT(errors[2], 200'000.0);  // the change shows at the next fit (250 us) ...
  EXPECT_LT(errors[4], 1'000.0);    // ... and is gone two later
}

// ---- the process's clock -----------------------------------------------------------------------

// Fits the process's line as the flusher would, until reads are on the TSC; false where they never
// are (the TSC not invariant or not the kernel's clock source, another architecture).
bool fit_process_clock() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    tc::calibrate();
    if (tc::reads_tsc()) return true;
    if (tc::next_calibration_ns() == UINT64_MAX) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

#define SKIP_WITHOUT_TSC_CLOCK()                                                                       \
  if (!fit_process_clock())                                                                            \
  GTEST_SKIP() << "this machine's CLOCK_MONOTONIC is not read from an invariant TSC; the trace clock " \
                  "is clock_gettime here"

TEST(TraceClockProcess, ReadsTheTscWithinAMicrosecondOfClockMonotonic) {
  SKIP_WITHOUT_TSC_CLOCK();
  int close = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t before = tc::monotonic_ns();
    const uint64_t ours = tc::now_ns();
    const uint64_t after = tc::monotonic_ns();
    // A preempted pair says nothing; most pairs are tens of ns apart.
    if (after - before > 2'000) continue;
    EXPECT_GE(ours + 1'000, before);
    EXPECT_LE(ours, after + 1'000);
    ++close;
  }
  EXPECT_GT(close, 500);
}

TEST(TraceClockProcess, ThreadsReadItWhileItIsRefittedAndNeverSeeItGoBack) {
  SKIP_WITHOUT_TSC_CLOCK();
  std::atomic<bool> stop{false};
  std::atomic<int> backwards{0};
  auto reader = [&] {
    uint64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t now = tc::now_ns();
      if (now < last) backwards.fetch_add(1);
      last = now;
    }
  };
  std::thread first(reader), second(reader);
  // The 200 ms fit and a few attempts that find nothing due.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < until) {
    tc::calibrate();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop.store(true);
  first.join();
  second.join();
  EXPECT_EQ(backwards.load(), 0);
  EXPECT_TRUE(tc::reads_tsc());
}

TEST(TraceClockProcess, AForkedChildKeepsTheLineAndFitsItsOwn) {
  SKIP_WITHOUT_TSC_CLOCK();
  const uint64_t parent_read = tc::now_ns();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    tc::reset_after_fork();
    const bool kept = tc::reads_tsc() && tc::now_ns() >= parent_read;
    // The child's schedule starts over: its first anchor is due at once.
    const bool due = tc::next_calibration_ns() <= tc::monotonic_ns();
    _exit(kept && due && fit_process_clock() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Publishes `line` as calibrate() would (the test's process is the only writer).
void publish_for_test(const tc::Line& line) {
  const uint32_t sequence = tc::g_line.sequence.load(std::memory_order_relaxed);
  tc::g_line.sequence.store(sequence + 1, std::memory_order_relaxed);
  tc::g_line.base_ticks.store(line.base_ticks, std::memory_order_relaxed);
  tc::g_line.base_ns.store(line.base_ns, std::memory_order_relaxed);
  tc::g_line.slope_q32.store(line.slope_q32, std::memory_order_relaxed);
  tc::g_line.until_ticks.store(line.until_ticks, std::memory_order_relaxed);
  tc::g_line.sequence.store(sequence + 2, std::memory_order_release);
}

#if defined(__x86_64__)
TEST(TraceClockProcess, AStaleLineIsLeftForClockGettime) {
  // In a child, so that this process's own line stays as it was fitted.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A line an hour ahead of CLOCK_MONOTONIC (one ns a tick): unmistakable where it is read.
    constexpr uint64_t kHour = 3600 * kSecond;
    tc::Line line;
    line.base_ticks = __builtin_ia32_rdtsc();
    line.base_ns = tc::monotonic_ns() + kHour;
    line.slope_q32 = uint64_t{1} << 32;
    line.until_ticks = line.base_ticks + 1000 * kSecond;
    publish_for_test(line);
    const bool read_while_fresh = tc::reads_tsc() && tc::now_ns() > tc::monotonic_ns() + kHour / 2;
    line.until_ticks = __builtin_ia32_rdtsc() - 1;  // stale from now on
    publish_for_test(line);
    const uint64_t before = tc::monotonic_ns();
    const uint64_t ours = tc::now_ns();
    const uint64_t after = tc::monotonic_ns();
    const bool stale_left = !tc::reads_tsc() && ours >= before && ours <= after;
    _exit((read_while_fresh ? 0 : 1) | (stale_left ? 0 : 2));
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status) & 1, 0) << "a fresh line was not read";
  EXPECT_EQ(WEXITSTATUS(status) & 2, 0) << "a stale line was read instead of clock_gettime";
}
#endif

TEST(TraceClockProcess, DisabledItReadsClockGettimeForGood) {
  SKIP_WITHOUT_TSC_CLOCK();
  tc::disable_tsc();
  EXPECT_FALSE(tc::reads_tsc());
  EXPECT_EQ(tc::next_calibration_ns(), UINT64_MAX);
  tc::calibrate();
  EXPECT_FALSE(tc::reads_tsc());
  const uint64_t before = tc::monotonic_ns();
  const uint64_t ours = tc::now_ns();
  EXPECT_GE(ours, before);
  EXPECT_LE(ours, tc::monotonic_ns());
}

}  // namespace
