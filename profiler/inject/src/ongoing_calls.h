// The flight recorder's table: calls (NCCL's, today) that have been entered and not yet returned,
// so that a trace written while a rank is blocked inside one shows it (trace format 1.3,
// nccl_call records). Each thread owns its own slots; entering and leaving a call is a few
// stores and one atomic exchange, no lock, no allocation after the thread's first call.
//
// Each flush (and a fatal-signal handler) writes every open call as kInFlight, seen running at
// that time, and marks it written; the thread that leaves a written call learns so and writes the
// kReturned record that completes it. A slot is a seqlock: the owner publishes a call with a release store of
// its state word, a reader copies the record and claims it with a compare-and-swap on that word, which fails
// when the owner freed or reused the slot meanwhile.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_writer.h"

namespace pipescope::inject {

// What is known of a call when it is entered (the fields of its nccl_call record that the
// caller fills; the table adds state, times, serial, thread and process rank).
struct CallFacts {
  uint64_t comm_id = 0;
  uint64_t parent_comm_id = 0;
  uint64_t sequence = 0;
  uint64_t bytes = 0;
  uint64_t enter_ns = 0;
  int32_t peer = -1;
  uint32_t group_id = 0;
  int32_t rank = -1;
  int32_t size = -1;
  trace::NcclCallKind kind = trace::NcclCallKind::kOperation;
  uint8_t what = 0;
  uint8_t flags = 0;
  uint8_t datatype = 0;
  uint8_t reduce_op = 0xFF;
};

class OngoingCalls {
  struct ThreadCalls;

 public:
  static constexpr size_t kMaxThreads = 256;
  // Calls one thread can have open at once: ungrouped calls hold one; a group holds its calls
  // until its outermost ncclGroupEnd returns. Calls beyond it are not tracked (counted).
  static constexpr size_t kCallsPerThread = 256;

  // A call as entered; false when it is not tracked.
  struct Ticket {
    ThreadCalls* calls = nullptr;
    uint32_t index = 0;
    uint32_t serial = 0;
    explicit operator bool() const { return calls != nullptr; }
  };

  OngoingCalls() = default;
  ~OngoingCalls();
  OngoingCalls(const OngoingCalls&) = delete;
  OngoingCalls& operator=(const OngoingCalls&) = delete;

  // The process's rank in the job, for the records (-1 until known).
  void set_global_rank(int32_t rank) noexcept { global_rank_.store(rank, std::memory_order_relaxed); }

  // Publishes a call of the calling thread. `held` calls stay open after they return, until
  // leave_held() (grouped calls).
  Ticket enter(const CallFacts& call, bool held = false) noexcept;
  // The call returned. True when it had been written in flight: then `returned` receives its
  // record (state kInFlight; the caller sets state, at_ns and result) and the caller writes it.
  bool leave(Ticket ticket, trace::NcclCallRecord& returned) noexcept;
  // The same from any thread (a call on a nonblocking communicator completes when
  // ncclCommGetAsyncError says so, on whichever thread asks). False when the ticket's call is no
  // longer open, or was not written in flight.
  bool release(Ticket ticket, trace::NcclCallRecord& returned) noexcept;
  // Whether the calling thread holds calls for a group (so that a group end must release them).
  bool holds_calls() const noexcept;
  // Closes the calling thread's held calls; for each that was written in flight, `on_written`
  // gets its record, as leave() gives it.
  template <class OnWritten>
  void leave_held(OnWritten&& on_written) noexcept;

  // Appends a kInFlight record (at_ns = now_ns) for every open call into `buffer`: a call that
  // stays blocked is written again at each flush, so that its trace says how long it ran.
  // Returns how many. From the flusher.
  size_t write_open(trace::ThreadBuffer& buffer, uint64_t now_ns) noexcept;
  // The same into `out` (whole records), for a fatal-signal handler: async-signal-safe. Returns
  // the bytes used; `records` receives the count.
  size_t write_open(std::span<std::byte> out, uint64_t now_ns, uint32_t& records) noexcept;

  uint64_t untracked() const noexcept { return untracked_.load(std::memory_order_relaxed); }

  // The child of a fork: the parent's calls are not its own (its other threads do not exist
  // here). Every slot is freed; the calling thread keeps its table, under its new thread id.
  void abandon_after_fork() noexcept;

 private:
  static constexpr size_t kWords = 8;  // CallFacts, packed
  // state = serial << 2 | status.
  enum Status : uint64_t { kFree = 0, kOpen = 1, kWritten = 2 };
  struct Slot {
    std::atomic<uint64_t> state{0};
    std::atomic<uint64_t> words[kWords];
  };
  struct ThreadCalls {
    std::atomic<uint32_t> tid{0};  // the kernel id of the thread that uses it
    uint32_t next_serial = 0;
    uint32_t held_count = 0;
    uint32_t next_free = 0;  // a hint: slots below it were in use when last looked at
    bool held[kCallsPerThread] = {};
    Slot slots[kCallsPerThread];
  };

  ThreadCalls* this_thread() noexcept;
  // The record of the call in `slot` as last published (its words read by the caller).
  trace::NcclCallRecord record_of(const uint64_t (&words)[kWords], uint64_t state,
                                  uint32_t tid) const noexcept;
  template <class Emit>
  size_t for_each_open(uint64_t now_ns, Emit& emit) noexcept;
  bool close_slot(ThreadCalls& calls, uint32_t index, trace::NcclCallRecord& returned) noexcept;

  std::atomic<ThreadCalls*> threads_[kMaxThreads] = {};
  std::atomic<size_t> thread_count_{0};
  std::atomic<uint64_t> untracked_{0};
  std::atomic<int32_t> global_rank_{-1};
  const uint32_t id_ = next_id_.fetch_add(1, std::memory_order_relaxed);
  static inline std::atomic<uint32_t> next_id_{1};
};

template <class OnWritten>
void OngoingCalls::leave_held(OnWritten&& on_written) noexcept {
  ThreadCalls* calls = this_thread();
  if (calls == nullptr || calls->held_count == 0) return;
  for (uint32_t i = 0; i < kCallsPerThread && calls->held_count > 0; ++i) {
    if (!calls->held[i]) continue;
    calls->held[i] = false;
    --calls->held_count;
    trace::NcclCallRecord returned;
    if (close_slot(*calls, i, returned)) on_written(returned);
  }
  calls->next_free = 0;
}

}  // namespace pipescope::inject
