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
    int state = kFree;
    // A slot is filled by a thread that holds these signals meanwhile (make_watched), never by
    // this one: it is done in a moment.
    while ((state = slot.state.load(std::memory_order_acquire)) == kFilling) {
    }
    if (state != kWatched) continue;
    if (::unlink(slot.path) != 0 && (errno == EISDIR || errno == EPERM)) remove_flat_dir(slot.path);
  }
  for (size_t i = 0; i < std::size(kSignals); ++i)
    if (kSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  errno = saved_errno;
  raise(sig);  // the handler that was there before, or the default: the process ends as it would
}

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

// While it lives, the four signals wait in this thread and it holds a slot in kFilling (if one
// was free); the slot ends watched (list()) or free again.
class Filling {
 public:
  Filling() {
    sigset_t held;
    sigemptyset(&held);
    for (const int sig : kSignals) sigaddset(&held, sig);
    pthread_sigmask(SIG_BLOCK, &held, &previous_mask_);
    for (size_t i = 0; i < kSlots && slot_ == kNone; ++i) {
      int expected = kFree;
      if (g_slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acq_rel)) slot_ = i;
    }
  }
  ~Filling() {
    if (slot_ != kNone && !listed_) g_slots[slot_].state.store(kFree, std::memory_order_release);
    pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);  // a signal that came meanwhile, now
  }
  Filling(const Filling&) = delete;
  Filling& operator=(const Filling&) = delete;

  // Lists `path` in the slot held; kNone when there is none or the path is too long for it.
  size_t list(const std::string& path) noexcept {
    if (slot_ == kNone || path.size() >= PATH_MAX) return kNone;
    std::memcpy(g_slots[slot_].path, path.c_str(), path.size() + 1);
    g_slots[slot_].state.store(kWatched, std::memory_order_release);
    listed_ = true;
    return slot_;
  }

 private:
  sigset_t previous_mask_{};
  size_t slot_ = kNone;
  bool listed_ = false;
};

}  // namespace

Made make_watched(std::string& path, const std::function<bool(std::string& path)>& make) {
  install();
  Filling filling;
  Made result;
  result.made = make(path);
  if (result.made) result.slot = filling.list(path);
  return result;
}

void forget(size_t slot) noexcept {
  if (slot < kSlots) g_slots[slot].state.store(kFree, std::memory_order_release);
}

}  // namespace pipescope::interrupted_cleanup
