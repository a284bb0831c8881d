// The trace clock: CLOCK_MONOTONIC in nanoseconds, read twice on every recorded NCCL call and NVTX
// range, and by CUPTI for its timestamps. Where the kernel itself derives CLOCK_MONOTONIC from an
// invariant TSC (clock source "tsc"), the clock reads the TSC and scales it with a line fitted to
// CLOCK_MONOTONIC: about 10 ns a read against the vDSO's 24 on the benchmarks' machine. The
// sessions' flushers re-fit the line every second, slewing it towards the kernel's clock and never
// stepping it back, so it stays monotonic and within tens of nanoseconds of CLOCK_MONOTONIC
// (docs/profiler.md, "The trace clock"). Before the first fit, where the TSC is not the kernel's
// clock source, on other architectures and when no flusher has re-fitted the line for a few
// seconds, a read is clock_gettime(CLOCK_MONOTONIC).
//
// The line is published as a seqlock: a reader copies it and checks the sequence word, retries
// once and otherwise reads clock_gettime, so a read never waits and is async-signal-safe.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace pipescope::inject::trace_clock {

// ns = base_ns + ((ticks - base_ticks) * slope_q32) >> 32, valid for ticks before until_ticks.
struct Line {
  uint64_t base_ticks = 0;
  uint64_t base_ns = 0;
  uint64_t slope_q32 = 0;    // nanoseconds per tick with 32 fraction bits; 0: no line
  uint64_t until_ticks = 0;  // past it the line is stale and reads fall back to clock_gettime

  uint64_t at(uint64_t ticks) const noexcept {
    __extension__ using Wide = __int128;
    const auto delta = static_cast<int64_t>(ticks - base_ticks);  // a read may precede the base
    const Wide scaled = static_cast<Wide>(delta) * static_cast<Wide>(slope_q32);
    return base_ns + static_cast<uint64_t>(static_cast<int64_t>(scaled >> 32));
  }
};

// A TSC reading and the CLOCK_MONOTONIC time read around it.
struct Anchor {
  uint64_t ticks = 0;
  uint64_t ns = 0;
};

// How long a line lasts without a re-fit before reads fall back to clock_gettime.
inline constexpr uint64_t kStaleAfterNs = 4'000'000'000;
// An error beyond which the line is restarted at the new anchor rather than slewed.
inline constexpr int64_t kMaxSlewNs = 1'000'000;

// The line to publish at `now`, given the one in use (slope 0: none yet) and the anchor taken at
// the previous fit, the next fit expected `horizon_ns` later. Its rate is the one measured between
// the two anchors; it passes through the current line's value at now.ticks (no step) and corrects
// the current line's error against now.ns by the next fit, its slope kept within a factor of two
// of the rate. It restarts at `now` where there was no line,
// where the current one had gone stale (reads were on clock_gettime) or had fallen behind by more
// than kMaxSlewNs. A slope of 0: the anchors make no sense (the counter or the clock went
// backwards), and the TSC is not to be used.
Line next_line(const Line& current, const Anchor& previous, const Anchor& now, uint64_t horizon_ns) noexcept;

inline uint64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The published line. Written by calibrate() alone, under its own flag.
struct alignas(64) PublishedLine {
  std::atomic<uint32_t> sequence{0};  // odd while being written
  std::atomic<uint64_t> base_ticks{0};
  std::atomic<uint64_t> base_ns{0};
  std::atomic<uint64_t> slope_q32{0};
  std::atomic<uint64_t> until_ticks{0};
};
extern PublishedLine g_line;

// The hot path: lock-free, allocation-free, async-signal-safe.
inline uint64_t now_ns() noexcept {
#if defined(__x86_64__)
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint32_t sequence = g_line.sequence.load(std::memory_order_acquire);
    Line line;
    line.base_ticks = g_line.base_ticks.load(std::memory_order_relaxed);
    line.base_ns = g_line.base_ns.load(std::memory_order_relaxed);
    line.slope_q32 = g_line.slope_q32.load(std::memory_order_relaxed);
    line.until_ticks = g_line.until_ticks.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((sequence & 1u) != 0 || g_line.sequence.load(std::memory_order_relaxed) != sequence) continue;
    if (line.slope_q32 == 0) break;
    const uint64_t ticks = __builtin_ia32_rdtsc();  // the builtin: no intrinsics header in every user
    if (ticks >= line.until_ticks) break;
    return line.at(ticks);
  }
#endif
  return monotonic_ns();
}

// Called by every session's flusher each time it wakes: takes an anchor and publishes a new line
// when a fit is due (20 ms and 200 ms after the first anchor, then every second). Cheap when none
// is due; never blocks (a second caller returns at once).
void calibrate() noexcept;
// CLOCK_MONOTONIC time at which calibrate() next has work, for the flusher's wake-up; UINT64_MAX
// where the TSC is not used.
uint64_t next_calibration_ns() noexcept;
// Whether reads are on the TSC line now (tests, benchmarks).
bool reads_tsc() noexcept;
// In the child of fork(): a fit the parent was publishing at that instant is dropped, and the
// child's flusher fits again from scratch.
void reset_after_fork() noexcept;
// Stops reading the TSC for good in this process (tests and benchmarks compare both clocks).
void disable_tsc() noexcept;

}  // namespace pipescope::inject::trace_clock
