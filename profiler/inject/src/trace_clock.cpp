#include "trace_clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <iterator>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace pipescope::inject::trace_clock {

PublishedLine g_line;

namespace {

__extension__ using Wide = __int128;

// Fits after the first anchor, then one every kSteadyIntervalNs: a short first interval puts reads
// on the TSC soon after the trace opens, the longer ones make the rate exact.
constexpr uint64_t kFitAfterNs[] = {20'000'000, 200'000'000};
constexpr uint64_t kSteadyIntervalNs = 1'000'000'000;
constexpr int kAnchorTries = 7;

// Writer state, touched only by the caller that holds g_writing.
std::atomic<bool> g_writing{false};
std::atomic<bool> g_disabled{false};
std::atomic<uint64_t> g_next_due_ns{0};
Anchor g_previous;
int g_fits = -1;  // -1: no anchor yet

#if defined(__x86_64__)
uint64_t ordered_ticks() noexcept {
  __builtin_ia32_lfence();
  const uint64_t ticks = __builtin_ia32_rdtsc();
  __builtin_ia32_lfence();
  return ticks;
}

bool invariant_tsc() noexcept {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1u << 8)) != 0;
}

// Whether the kernel reads CLOCK_MONOTONIC from the TSC now: its watchdog moves the clock source
// off a TSC it finds unstable, and then so does this clock. Read on every fit.
bool kernel_clock_is_tsc() noexcept {
  const int fd =
      open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[32] = {};
  const ssize_t got = read(fd, name, sizeof(name) - 1);
  close(fd);
  return got >= 3 && std::strncmp(name, "tsc", 3) == 0 && (got == 3 || name[3] == '\n');
}

// The TSC reading with the tightest pair of clock_gettime calls around it, of a few tries.
Anchor take_anchor() noexcept {
  Anchor best;
  uint64_t best_gap = UINT64_MAX;
  for (int attempt = 0; attempt < kAnchorTries; ++attempt) {
    const uint64_t before = monotonic_ns();
    const uint64_t ticks = ordered_ticks();
    const uint64_t after = monotonic_ns();
    if (after < before || after - before >= best_gap) continue;
    best_gap = after - before;
    best = Anchor{ticks, before + (after - before) / 2};
  }
  return best;
}
#endif

Line published() noexcept {
  Line line;
  line.base_ticks = g_line.base_ticks.load(std::memory_order_relaxed);
  line.base_ns = g_line.base_ns.load(std::memory_order_relaxed);
  line.slope_q32 = g_line.slope_q32.load(std::memory_order_relaxed);
  line.until_ticks = g_line.until_ticks.load(std::memory_order_relaxed);
  return line;
}

void publish(const Line& line) noexcept {
  const uint32_t sequence = g_line.sequence.load(std::memory_order_relaxed);
  g_line.sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  g_line.base_ticks.store(line.base_ticks, std::memory_order_relaxed);
  g_line.base_ns.store(line.base_ns, std::memory_order_relaxed);
  g_line.slope_q32.store(line.slope_q32, std::memory_order_relaxed);
  g_line.until_ticks.store(line.until_ticks, std::memory_order_relaxed);
  g_line.sequence.store(sequence + 2, std::memory_order_release);
}

void stop_reading_tsc() noexcept {
  g_disabled.store(true, std::memory_order_relaxed);
  g_next_due_ns.store(UINT64_MAX, std::memory_order_relaxed);
  publish(Line{});
}

uint64_t interval_after(int fits) noexcept {
  return fits < static_cast<int>(std::size(kFitAfterNs)) ? kFitAfterNs[fits] : kSteadyIntervalNs;
}

}  // namespace

Line next_line(const Line& current, const Anchor& previous, const Anchor& now, uint64_t horizon_ns) noexcept {
  if (now.ticks <= previous.ticks || now.ns <= previous.ns) return Line{};
  const uint64_t interval_ticks = now.ticks - previous.ticks;
  const auto rate = static_cast<uint64_t>((static_cast<Wide>(now.ns - previous.ns) << 32) / interval_ticks);
  if (rate == 0) return Line{};
  const auto stale_ticks = static_cast<uint64_t>((static_cast<Wide>(kStaleAfterNs) << 32) / rate);

  Line next;
  next.base_ticks = now.ticks;
  next.until_ticks = now.ticks + stale_ticks;
  next.slope_q32 = rate;
  next.base_ns = now.ns;
  const bool usable = current.slope_q32 != 0 && now.ticks < current.until_ticks;
  if (!usable) return next;
  const uint64_t ours = current.at(now.ticks);
  const auto error = static_cast<int64_t>(now.ns - ours);  // > 0: the line runs behind
  if (error > kMaxSlewNs) return next;
  // Slew: from (now.ticks, ours), reach the kernel's clock at the next fit.
  const Wide horizon_ticks =
      (static_cast<Wide>(horizon_ns < 1'000'000 ? 1'000'000 : horizon_ns) << 32) / rate;
  const Wide correction = (static_cast<Wide>(error) << 32) / horizon_ticks;
  Wide slope = static_cast<Wide>(rate) + correction;
  const Wide lowest = static_cast<Wide>(rate / 2);
  const Wide highest = static_cast<Wide>(rate) * 2;
  if (slope < lowest) slope = lowest;
  if (slope > highest) slope = highest;
  next.base_ns = ours;
  next.slope_q32 = static_cast<uint64_t>(slope);
  return next;
}

void calibrate() noexcept {
#if defined(__x86_64__)
  if (g_disabled.load(std::memory_order_relaxed)) return;
  const uint64_t due = g_next_due_ns.load(std::memory_order_relaxed);
  if (due != 0 && monotonic_ns() < due) return;
  if (g_writing.exchange(true, std::memory_order_acquire)) return;
  static const bool invariant = invariant_tsc();
  if (!invariant || !kernel_clock_is_tsc()) {
    stop_reading_tsc();
  } else {
    const Anchor now = take_anchor();
    if (g_fits >= 0) {
      const Line line = next_line(published(), g_previous, now, interval_after(g_fits + 1));
      if (line.slope_q32 == 0) {
        stop_reading_tsc();
      } else {
        publish(line);
      }
    }
    g_previous = now;
    ++g_fits;
    if (!g_disabled.load(std::memory_order_relaxed))
      g_next_due_ns.store(now.ns + interval_after(g_fits), std::memory_order_relaxed);
  }
  g_writing.store(false, std::memory_order_release);
#endif
}

uint64_t next_calibration_ns() noexcept {
#if defined(__x86_64__)
  const uint64_t due = g_next_due_ns.load(std::memory_order_relaxed);
  return due == 0 ? monotonic_ns() : due;
#else
  return UINT64_MAX;
#endif
}

bool reads_tsc() noexcept {
#if defined(__x86_64__)
  const Line line = published();
  return line.slope_q32 != 0 && __builtin_ia32_rdtsc() < line.until_ticks;
#else
  return false;
#endif
}

void reset_after_fork() noexcept {
  // The child's one thread: nobody else is reading or writing.
  if ((g_line.sequence.load(std::memory_order_relaxed) & 1u) != 0) {
    g_line.sequence.fetch_add(1, std::memory_order_relaxed);
    publish(Line{});
  }
  g_writing.store(false, std::memory_order_relaxed);
  g_fits = -1;
  g_previous = Anchor{};
  if (!g_disabled.load(std::memory_order_relaxed)) g_next_due_ns.store(0, std::memory_order_relaxed);
}

void disable_tsc() noexcept {
  while (g_writing.exchange(true, std::memory_order_acquire)) {
  }
  stop_reading_tsc();
  g_writing.store(false, std::memory_order_release);
}

}  // namespace pipescope::inject::trace_clock
