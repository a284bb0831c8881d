#include "interrupted_outputs.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace pipescope::exporter::interrupted_outputs {
namespace {

// A few outputs are open at once at most (report: the HTML page; export: one file).
constexpr size_t kSlots = 8;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

enum SlotState : int { kFree, kFilling, kWatched };
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot g_slots[kSlots];
struct sigaction g_previous[std::size(kSignals)];

void remove_watched_and_resignal(int sig) {
  for (Slot& slot : g_slots)
    if (slot.state.load(std::memory_order_acquire) == kWatched) ::unlink(slot.path);
  for (size_t i = 0; i < std::size(kSignals); ++i)
    if (kSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  raise(sig);  // the handler that was there before, or the default: the process ends as it would
}

void install_once() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction action {};
    action.sa_handler = remove_watched_and_resignal;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      sigaction(kSignals[i], nullptr, &g_previous[i]);
      // A signal the process ignores (nohup, a shell's background job) stays ignored.
      if (g_previous[i].sa_handler == SIG_IGN) continue;
      sigaction(kSignals[i], &action, nullptr);
    }
  });
}

}  // namespace

size_t watch(const char* path) noexcept {
  if (std::strlen(path) >= PATH_MAX) return kNone;
  install_once();
  for (size_t i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acq_rel)) continue;
    std::strcpy(g_slots[i].path, path);
    g_slots[i].state.store(kWatched, std::memory_order_release);
    return i;
  }
  return kNone;
}

void forget(size_t slot) noexcept {
  if (slot < kSlots) g_slots[slot].state.store(kFree, std::memory_order_release);
}

}  // namespace pipescope::exporter::interrupted_outputs
