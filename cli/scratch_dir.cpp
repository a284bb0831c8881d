#include "scratch_dir.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace pipescope::cli {
namespace {

// The directories alive now, for the signal handler: fixed slots, no allocation, read with
// atomics only. A command makes one or two.
struct Slot {
  std::atomic<bool> in_use{false};
  char path[PATH_MAX] = {};
};
std::array<Slot, 8> g_slots;
std::mutex g_slots_mutex;  // between threads making and removing directories; never in the handler

constexpr std::array kEndingSignals = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

// Empties the flat directory at `path` and removes it, with system calls a signal handler may make.
void remove_flat_dir(const char* path) noexcept {
  const int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    // Entries removed while the directory is read may hide others: read it again until a pass
    // finds nothing left to remove.
    for (int pass = 0; pass < 8; ++pass) {
      bool removed = false;
      lseek(dir, 0, SEEK_SET);
      alignas(8) char buffer[4096];
      for (;;) {
        const long got = syscall(SYS_getdents64, dir, buffer, sizeof(buffer));
        if (got <= 0) break;
        for (long at = 0; at < got;) {
          // struct linux_dirent64: inode, offset, record length, type, name.
          uint16_t length = 0;
          std::memcpy(&length, buffer + at + 16, sizeof(length));
          const char* name = buffer + at + 19;
          if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0 && unlinkat(dir, name, 0) == 0)
            removed = true;
          at += length;
        }
      }
      if (!removed) break;
    }
    close(dir);
  }
  rmdir(path);
}

void on_ending_signal(int sig) {
  const int saved_errno = errno;
  for (Slot& slot : g_slots)
    if (slot.in_use.load(std::memory_order_acquire)) remove_flat_dir(slot.path);
  // Then the signal does what it would have done: the command ends by it.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(sig, &fallback, nullptr);
  errno = saved_errno;
  raise(sig);
}

// Once: the handler for each ending signal the command did not inherit as ignored.
void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : kEndingSignals) {
      struct sigaction current {};
      if (sigaction(sig, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
      struct sigaction handler {};
      handler.sa_handler = on_ending_signal;
      sigemptyset(&handler.sa_mask);
      for (const int other : kEndingSignals) sigaddset(&handler.sa_mask, other);
      sigaction(sig, &handler, nullptr);
    }
  });
}

}  // namespace

Expected<std::string> make_scratch_dir(const std::string& tag, std::shared_ptr<void>& cleanup) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/pipescope-" + tag + "-XXXXXX";
  if (pattern.size() >= PATH_MAX) return Error("the temporary directory's path is too long: " + pattern);
  install_handlers();
  Slot* slot = nullptr;
  {
    std::lock_guard lock(g_slots_mutex);
    for (Slot& s : g_slots) {
      if (!s.in_use.load(std::memory_order_relaxed)) {
        slot = &s;
        break;
      }
    }
    if (slot == nullptr) return Error("too many temporary directories at once");
    if (mkdtemp(pattern.data()) == nullptr)
      return Error("cannot create a temporary directory under " + pattern + ": " + std::strerror(errno));
    std::memcpy(slot->path, pattern.c_str(), pattern.size() + 1);
    slot->in_use.store(true, std::memory_order_release);
  }
  cleanup = std::shared_ptr<void>(nullptr, [slot, path = pattern](void*) {
    // Removed before the slot is given up: a signal meanwhile finishes the removal.
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
    std::lock_guard lock(g_slots_mutex);
    slot->in_use.store(false, std::memory_order_release);
  });
  return pattern;
}

}  // namespace pipescope::cli
