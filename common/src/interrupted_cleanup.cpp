#include "pipescope/common/interrupted_cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace pipescope::interrupted_cleanup {
namespace {

// A few paths are listed at once at most (report: its private directory and the HTML page).
constexpr size_t kSlots = 8;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

enum SlotState : int { kFree, kFilling, kWatched };
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot g_slots[kSlots];
struct sigaction g_previous[std::size(kSignals)];

// Empties the flat directory at `path` and removes it, with system calls a signal handler may make.
void remove_flat_dir(const char* path) noexcept {
  const int dir = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    // Entries removed while the directory is read may hide others: read it again until a pass
    // finds nothing left to remove.
    for (int pass = 0; pass < 8; ++pass) {
      bool removed = false;
      ::lseek(dir, 0, SEEK_SET);
      alignas(8) char buffer[4096];
      for (;;) {
        const long got = ::syscall(SYS_getdents64, dir, buffer, sizeof(buffer));
        if (got <= 0) break;
        for (long at = 0; at < got;) {
          // struct linux_dirent64: inode (8 bytes), offset (8), record length (2), type (1), name.
          uint16_t length = 0;
          std::memcpy(&length, buffer + at + 16, sizeof(length));
          const char* name = buffer + at + 19;
          if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0 && ::unlinkat(dir, name, 0) == 0)
            removed = true;
          at += length;
        }
      }
      if (!removed) break;
    }
    ::close(dir);
  }
  ::rmdir(path);
}

void remove_watched_and_resignal(int sig) {
  const int saved_errno = errno;
  for (Slot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) != kWatched) continue;
    if (::unlink(slot.path) != 0 && (errno == EISDIR || errno == EPERM)) remove_flat_dir(slot.path);
  }
  for (size_t i = 0; i < std::size(kSignals); ++i)
    if (kSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  errno = saved_errno;
  raise(sig);  // the handler that was there before, or the default: the process ends as it would
}

}  // namespace

void install() noexcept {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction action {};
    action.sa_handler = remove_watched_and_resignal;
    sigemptyset(&action.sa_mask);
    for (const int sig : kSignals) sigaddset(&action.sa_mask, sig);
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      sigaction(kSignals[i], nullptr, &g_previous[i]);
      // A signal the process ignores (nohup, a shell's background job) stays ignored.
      if (g_previous[i].sa_handler == SIG_IGN) continue;
      sigaction(kSignals[i], &action, nullptr);
    }
  });
}

size_t watch(const char* path) noexcept {
  if (std::strlen(path) >= PATH_MAX) return kNone;
  install();
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

}  // namespace pipescope::interrupted_cleanup
