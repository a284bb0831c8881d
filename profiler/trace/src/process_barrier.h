// The heavy side of an asymmetric fence: after process_wide_barrier() returns, every other thread
// of the process has passed a full memory barrier, so a thread that needs store-to-load ordering
// against this one may order its own accesses with a compiler barrier alone. The trace writer uses
// it so that the record path stays free of fences while close() still sees every producer that
// missed the closed flag (trace_writer.h, ThreadBuffer::append_bytes).
#pragma once

namespace pipescope::trace {

enum class BarrierKind {
  kPrivateExpedited,  // membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): IPIs to this process's CPUs
  kGlobal,            // membarrier(MEMBARRIER_CMD_GLOBAL): waits for every CPU to schedule
  kPause,             // no membarrier (kernel older than 4.3, or a seccomp filter refuses it)
};

// Slow (microseconds, up to milliseconds for kGlobal and kPause): for rare events such as closing
// a trace. kPause is a full fence and a 1 ms sleep, in which every CPU's store buffer drains, which
// real hardware does in far less, though no standard promises it.
BarrierKind process_wide_barrier() noexcept;

}  // namespace pipescope::trace
