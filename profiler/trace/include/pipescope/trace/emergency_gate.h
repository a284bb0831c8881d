// A resource that ordinary code guards with a mutex and that a fatal-signal handler may need too.
// A handler cannot take a mutex (pthread_mutex_* are not async-signal-safe, and the interrupted
// thread may hold it), so the two sides meet through two atomic flags instead, Dekker's way:
// ordinary code, with its mutex held, marks itself inside and then looks for a claim; the handler
// claims and then waits, bounded, for ordinary code to leave. With sequentially consistent
// operations one of them always sees the other: either the ordinary side backs off, or the
// handler waits for it. Everything here is lock-free atomics and nanosleep: async-signal-safe.
#pragma once

#include <time.h>

#include <atomic>

namespace pipescope::trace {

class EmergencyGate {
 public:
  // Ordinary side, mutex held: false when a handler owns the resource (leave it alone).
  bool enter() noexcept {
    inside_.store(true);
    if (!claimed_.load()) return true;
    inside_.store(false);
    return false;
  }
  void leave() noexcept { inside_.store(false); }

  // Handler side: claims the resource and waits up to `wait_ms` for ordinary code to leave it.
  // False, with nothing claimed, when another handler holds it or ordinary code stayed inside
  // (the interrupted thread itself may be there, and never leaves).
  bool claim(int wait_ms) noexcept {
    if (claimed_.exchange(true)) return false;
    for (int waited = 0; inside_.load(); ++waited) {
      if (waited >= wait_ms) {
        claimed_.store(false);
        return false;
      }
      const timespec one_ms{0, 1'000'000};
      nanosleep(&one_ms, nullptr);
    }
    return true;
  }
  void release() noexcept { claimed_.store(false); }
  bool claimed() const noexcept { return claimed_.load(); }

 private:
  std::atomic<bool> inside_{false};
  std::atomic<bool> claimed_{false};
};

// Ordinary side of a gate for the scope of a mutex-held section.
class GateEntry {
 public:
  explicit GateEntry(EmergencyGate& gate) noexcept : gate_(gate), entered_(gate.enter()) {}
  ~GateEntry() {
    if (entered_) gate_.leave();
  }
  GateEntry(const GateEntry&) = delete;
  GateEntry& operator=(const GateEntry&) = delete;
  bool entered() const noexcept { return entered_; }

 private:
  EmergencyGate& gate_;
  bool entered_;
};

}  // namespace pipescope::trace
