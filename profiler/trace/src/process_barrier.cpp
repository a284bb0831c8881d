#include "process_barrier.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

namespace pipescope::trace {
namespace {

long membarrier(int command) noexcept { return syscall(__NR_membarrier, command, 0, 0); }

// Registration is once per process and idempotent; the expedited command fails without it.
bool private_expedited_barrier() noexcept {
  static const bool registered = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  return registered && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

}  // namespace

BarrierKind process_wide_barrier() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (private_expedited_barrier()) return BarrierKind::kPrivateExpedited;
  if (membarrier(MEMBARRIER_CMD_GLOBAL) == 0) return BarrierKind::kGlobal;
  const timespec one_ms{0, 1'000'000};
  nanosleep(&one_ms, nullptr);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return BarrierKind::kPause;
}

}  // namespace pipescope::trace
