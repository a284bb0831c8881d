#include "ongoing_calls.h"

#include <cstring>
#include <new>

#include "session.h"

namespace pipescope::inject {
namespace {

using trace::NcclCallRecord;

// The calling thread's table in the OngoingCalls it used last (tables are found by kernel thread
// id: a thread that ended leaves its table, with no call open, to a later thread of the same id).
struct CachedTable {
  uint32_t owner = 0;
  void* calls = nullptr;
};
thread_local CachedTable t_cached;

uint64_t status_of(uint64_t state) { return state & 3; }

}  // namespace

OngoingCalls::~OngoingCalls() {
  const size_t count = thread_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) delete threads_[i].load(std::memory_order_acquire);
}

OngoingCalls::ThreadCalls* OngoingCalls::this_thread() noexcept {
  if (t_cached.owner == id_) return static_cast<ThreadCalls*>(t_cached.calls);
  const uint32_t tid = Session::thread_id();
  ThreadCalls* found = nullptr;
  const size_t count = thread_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count && found == nullptr; ++i) {
    ThreadCalls* calls = threads_[i].load(std::memory_order_acquire);
    if (calls != nullptr && calls->tid.load(std::memory_order_relaxed) == tid) found = calls;
  }
  if (found == nullptr) {
    auto* fresh = new (std::nothrow) ThreadCalls;
    if (fresh == nullptr) return nullptr;
    fresh->tid.store(tid, std::memory_order_relaxed);
    size_t index = thread_count_.load(std::memory_order_relaxed);
    while (true) {
      if (index >= kMaxThreads) {
        delete fresh;
        return nullptr;
      }
      ThreadCalls* expected = nullptr;
      if (threads_[index].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) break;
      ++index;
    }
    // Publish [0, index]: a reader walks only entries below the count, all set.
    size_t published = thread_count_.load(std::memory_order_relaxed);
    while (published < index + 1 &&
           !thread_count_.compare_exchange_weak(published, index + 1, std::memory_order_acq_rel)) {
    }
    found = fresh;
  }
  t_cached = CachedTable{id_, found};
  return found;
}

namespace {

uint64_t pack32(int32_t low, int32_t high) {
  return uint64_t{static_cast<uint32_t>(low)} | uint64_t{static_cast<uint32_t>(high)} << 32;
}
int32_t low32(uint64_t word) { return static_cast<int32_t>(static_cast<uint32_t>(word)); }
int32_t high32(uint64_t word) { return static_cast<int32_t>(static_cast<uint32_t>(word >> 32)); }

}  // namespace

OngoingCalls::Ticket OngoingCalls::enter(const CallFacts& call, bool held) noexcept {
  ThreadCalls* calls = this_thread();
  if (calls == nullptr) {
    untracked_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  // From the hint, then once from the start: another thread may have released a slot below it.
  const auto free_from = [&](uint32_t from, uint32_t to) {
    while (from < to && status_of(calls->slots[from].state.load(std::memory_order_relaxed)) != kFree) ++from;
    return from;
  };
  uint32_t index = free_from(calls->next_free, kCallsPerThread);
  if (index == kCallsPerThread) {
    const uint32_t below = free_from(0, calls->next_free);
    if (below < calls->next_free) index = below;
  }
  if (index == kCallsPerThread) {
    untracked_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  calls->next_free = index + 1;
  Slot& slot = calls->slots[index];
  const uint32_t serial = ++calls->next_serial;
  // The slot is free (state kFree): readers that copied its old words fail their claim, and the
  // fence orders those words' new values after the state they saw.
  std::atomic_thread_fence(std::memory_order_release);
  slot.words[0].store(call.comm_id, std::memory_order_relaxed);
  slot.words[1].store(call.parent_comm_id, std::memory_order_relaxed);
  slot.words[2].store(call.sequence, std::memory_order_relaxed);
  slot.words[3].store(call.bytes, std::memory_order_relaxed);
  slot.words[4].store(call.enter_ns, std::memory_order_relaxed);
  slot.words[5].store(pack32(call.peer, static_cast<int32_t>(call.group_id)), std::memory_order_relaxed);
  slot.words[6].store(pack32(call.rank, call.size), std::memory_order_relaxed);
  slot.words[7].store(uint64_t{static_cast<uint8_t>(call.kind)} | uint64_t{call.what} << 8 |
                          uint64_t{call.flags} << 16 | uint64_t{call.datatype} << 24 |
                          uint64_t{call.reduce_op} << 32,
                      std::memory_order_relaxed);
  slot.state.store(uint64_t{serial} << 2 | kOpen, std::memory_order_release);
  if (held) {
    calls->held[index] = true;
    ++calls->held_count;
  }
  return Ticket{calls, index, serial};
}

trace::NcclCallRecord OngoingCalls::record_of(const uint64_t (&words)[kWords], uint64_t state,
                                              uint32_t tid) const noexcept {
  auto record = trace::make_record<NcclCallRecord>();
  record.comm_id = words[0];
  record.parent_comm_id = words[1];
  record.sequence = words[2];
  record.bytes = words[3];
  record.enter_ns = words[4];
  record.peer = low32(words[5]);
  record.group_id = static_cast<uint32_t>(high32(words[5]));
  record.rank = low32(words[6]);
  record.size = high32(words[6]);
  record.call_kind = static_cast<uint8_t>(words[7]);
  record.what = static_cast<uint8_t>(words[7] >> 8);
  record.flags = static_cast<uint8_t>(words[7] >> 16);
  record.datatype = static_cast<uint8_t>(words[7] >> 24);
  record.reduce_op = static_cast<uint8_t>(words[7] >> 32);
  record.state = static_cast<uint8_t>(trace::NcclCallState::kInFlight);
  record.call_serial = static_cast<uint32_t>(state >> 2);
  record.thread_id = tid;
  record.global_rank = global_rank_.load(std::memory_order_relaxed);
  return record;
}

bool OngoingCalls::close_slot(ThreadCalls& calls, uint32_t index, NcclCallRecord& returned) noexcept {
  Slot& slot = calls.slots[index];
  const uint64_t before = slot.state.exchange(kFree, std::memory_order_acq_rel);
  if (index < calls.next_free) calls.next_free = index;
  if (status_of(before) != kWritten) return false;
  uint64_t words[kWords];
  for (size_t w = 0; w < kWords; ++w) words[w] = slot.words[w].load(std::memory_order_relaxed);
  returned = record_of(words, before, calls.tid.load(std::memory_order_relaxed));
  return true;
}

bool OngoingCalls::release(Ticket ticket, NcclCallRecord& returned) noexcept {
  if (!ticket) return false;
  Slot& slot = ticket.calls->slots[ticket.index];
  uint64_t state = slot.state.load(std::memory_order_acquire);
  do {
    if (status_of(state) == kFree || state >> 2 != ticket.serial) return false;  // closed, or reused
  } while (!slot.state.compare_exchange_weak(state, kFree, std::memory_order_acq_rel));
  if (status_of(state) != kWritten) return false;
  uint64_t words[kWords];
  for (size_t w = 0; w < kWords; ++w) words[w] = slot.words[w].load(std::memory_order_relaxed);
  returned = record_of(words, state, ticket.calls->tid.load(std::memory_order_relaxed));
  return true;
}

bool OngoingCalls::leave(Ticket ticket, NcclCallRecord& returned) noexcept {
  if (!ticket || ticket.calls->held[ticket.index]) return false;  // held: closes at the group's end
  return close_slot(*ticket.calls, ticket.index, returned);
}

void OngoingCalls::abandon_after_fork() noexcept {
  const size_t count = thread_count_.load(std::memory_order_acquire);
  for (size_t t = 0; t < count; ++t) {
    ThreadCalls* calls = threads_[t].load(std::memory_order_acquire);
    if (calls == nullptr) continue;
    for (uint32_t i = 0; i < kCallsPerThread; ++i) {
      calls->slots[i].state.store(kFree, std::memory_order_relaxed);
      calls->held[i] = false;
    }
    calls->held_count = 0;
    calls->next_free = 0;
  }
  if (t_cached.owner == id_ && t_cached.calls != nullptr)
    static_cast<ThreadCalls*>(t_cached.calls)->tid.store(Session::thread_id(), std::memory_order_relaxed);
}

bool OngoingCalls::holds_calls() const noexcept {
  if (t_cached.owner != id_ || t_cached.calls == nullptr) return false;
  return static_cast<const ThreadCalls*>(t_cached.calls)->held_count > 0;
}

template <class Emit>
size_t OngoingCalls::for_each_open(uint64_t now_ns, Emit& emit) noexcept {
  size_t written = 0;
  const size_t count = thread_count_.load(std::memory_order_acquire);
  for (size_t t = 0; t < count; ++t) {
    ThreadCalls* calls = threads_[t].load(std::memory_order_acquire);
    if (calls == nullptr) continue;
    for (Slot& slot : calls->slots) {
      const uint64_t state = slot.state.load(std::memory_order_acquire);
      if (status_of(state) == kFree) continue;
      if (!emit.has_room()) return written;
      uint64_t words[kWords];
      for (size_t w = 0; w < kWords; ++w) words[w] = slot.words[w].load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      // Unchanged since `state` was read: the copy is that call's (and marked written, if not yet).
      uint64_t expected = state;
      if (!slot.state.compare_exchange_strong(expected, (state & ~uint64_t{3}) | kWritten,
                                              std::memory_order_acq_rel))
        continue;
      NcclCallRecord record = record_of(words, state, calls->tid.load(std::memory_order_relaxed));
      record.at_ns = now_ns;
      emit.put(record);
      ++written;
    }
  }
  return written;
}

size_t OngoingCalls::write_open(trace::ThreadBuffer& buffer, uint64_t now_ns) noexcept {
  struct IntoBuffer {
    trace::ThreadBuffer& buffer;
    bool has_room() const { return true; }
    void put(const NcclCallRecord& record) { buffer.append(record); }
  };
  IntoBuffer into{buffer};
  return for_each_open(now_ns, into);
}

size_t OngoingCalls::write_open(std::span<std::byte> out, uint64_t now_ns, uint32_t& records) noexcept {
  struct IntoBytes {
    std::span<std::byte> out;
    size_t used = 0;
    bool has_room() const { return out.size() - used >= sizeof(NcclCallRecord); }
    void put(const NcclCallRecord& record) {
      std::memcpy(out.data() + used, &record, sizeof(record));
      used += sizeof(record);
    }
  } into{out};
  records = static_cast<uint32_t>(for_each_open(now_ns, into));
  return into.used;
}

}  // namespace pipescope::inject
