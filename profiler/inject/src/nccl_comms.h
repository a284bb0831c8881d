// Communicators as the NCCL interposer knows them: the identity every member of a communicator
// derives to the same value, the per-communicator record (rank, size, device, parent), the
// sequence numbers that pair one operation across ranks, and the per-thread group state.
// Pure logic: nothing here calls NCCL, so it is tested without the library.
//
// Hot path contract: CommRegistry::find, the sequence counters and the group state are lock-free
// and allocation-free. Only communicator creation (rare) takes the registry's mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "pipescope/trace/records.h"

namespace pipescope::inject::nccl {

using trace::kNcclUnknownSequence;

// Identities. Each kind of derivation hashes a different tag, so an id from one kind never equals
// one from another by construction of the input; all are nonzero (0 means "no parent").
//
// InitRank, InitRankConfig and InitRankScalable: every member passes the same ncclUniqueId bytes.
uint64_t identity_of_unique_ids(std::span<const std::byte> id_bytes) noexcept;
// ncclCommSplit: members call split on a parent in the same order, so the k-th split of a parent
// (k counted in each process, NOCOLOR calls included) with a given color is one communicator.
uint64_t identity_of_split(uint64_t parent_identity, int32_t color, uint32_t split_index) noexcept;
// ncclCommShrink: the same parent, the same excluded ranks (order does not matter), the k-th shrink.
uint64_t identity_of_shrink(uint64_t parent_identity, std::span<const int32_t> excluded_ranks,
                            uint32_t shrink_index) noexcept;
// ncclCommInitAll: one process holds every member, so the identity only has to be unique in the
// job: the host, the process and the how-many-th InitAll call it is.
uint64_t identity_of_init_all(std::string_view host, int64_t pid, uint32_t call_index) noexcept;

// What a creation call knows about one communicator.
struct CommFacts {
  uint64_t handle = 0;  // the ncclComm_t value
  uint64_t identity = 0;
  uint64_t parent_identity = 0;  // split and shrink
  trace::NcclCommEvent event = trace::NcclCommEvent::kInit;
  int32_t rank = -1;  // -1 until known
  int32_t size = -1;
  int32_t color = -1;  // split color; -1 when not a split
  uint32_t split_index = 0;
  uint32_t device = trace::kUnknownDevice;
  // Send/recv counters are preallocated for this many peers: the size when the arguments give it,
  // the parent's capacity for split and shrink (a child is never larger than its parent).
  uint32_t peer_capacity = 0;
  uint64_t start_ns = 0;  // the creation call
  uint64_t end_ns = 0;
};

enum class P2pDirection : uint8_t { kSend = 0, kRecv = 1 };

// One communicator in one process. Never freed while the registry lives: a late call on a
// destroyed communicator (or a thread racing its destruction) still reads valid memory.
class Comm {
 public:
  explicit Comm(const CommFacts& facts);
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  uint64_t handle() const noexcept { return handle_; }
  uint64_t identity() const noexcept { return identity_; }
  uint64_t parent_identity() const noexcept { return parent_identity_; }
  trace::NcclCommEvent creation_event() const noexcept { return creation_event_; }
  int32_t color() const noexcept { return color_; }
  uint32_t split_index() const noexcept { return split_index_; }
  uint32_t peer_capacity() const noexcept { return peer_capacity_.load(std::memory_order_acquire); }
  uint64_t created_start_ns() const noexcept { return start_ns_; }
  uint64_t created_end_ns() const noexcept { return end_ns_; }

  // Rank, size and device may be learned after creation (nonblocking communicators, creation
  // inside a group): see the details handshake below.
  int32_t rank() const noexcept { return rank_.load(std::memory_order_relaxed); }
  int32_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  uint32_t device() const noexcept { return device_.load(std::memory_order_relaxed); }

  // Details handshake: while details are pending, one thread at a time may claim the right to ask
  // NCCL for them; it then either completes them or gives the claim back for a later try.
  bool details_pending() const noexcept {
    return details_.load(std::memory_order_acquire) != Details::kKnown;
  }
  bool claim_details() noexcept;
  // Stores what was learned (a negative value / kUnknownDevice keeps the current one) and marks
  // the details known; the send/recv counters are allocated here if creation could not size them.
  void complete_details(int32_t rank, int32_t size, uint32_t device) noexcept;
  void release_details_claim() noexcept;

  // The creation record is written exactly once: the first caller gets true.
  bool take_creation_report() noexcept {
    return !creation_reported_.exchange(true, std::memory_order_acq_rel);
  }

  // Lifecycle: the last teardown event seen (0 while live). After destroy or abort the handle
  // is free and NCCL may hand the same pointer value to a new communicator.
  void mark(trace::NcclCommEvent event) noexcept { last_event_.store(static_cast<uint8_t>(event)); }
  uint8_t last_event() const noexcept { return last_event_.load(std::memory_order_relaxed); }
  bool handle_released() const noexcept;

  // Sequence numbers, from 0. `next_*` takes a number; `peek_*` says which number the next call
  // would take (the number a failed call reports: it does not consume one).
  uint64_t next_collective() noexcept { return collectives_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t peek_collective() const noexcept { return collectives_.load(std::memory_order_relaxed); }
  uint64_t next_p2p(int32_t peer, P2pDirection direction) noexcept;
  uint64_t peek_p2p(int32_t peer, P2pDirection direction) const noexcept;

  // How many splits / shrinks of this communicator came before; each call takes the next index.
  uint32_t next_split_index() noexcept { return splits_.fetch_add(1, std::memory_order_relaxed); }
  uint32_t next_shrink_index() noexcept { return shrinks_.fetch_add(1, std::memory_order_relaxed); }

 private:
  enum class Details : uint8_t { kPending, kClaimed, kKnown };
  std::atomic<uint64_t>* p2p_counter(int32_t peer, P2pDirection direction) const noexcept;
  void allocate_p2p(uint32_t peers) noexcept;

  const uint64_t handle_;
  const uint64_t identity_;
  const uint64_t parent_identity_;
  const trace::NcclCommEvent creation_event_;
  const int32_t color_;
  const uint32_t split_index_;
  const uint64_t start_ns_;
  const uint64_t end_ns_;

  std::atomic<int32_t> rank_;
  std::atomic<int32_t> size_;
  std::atomic<uint32_t> device_;
  std::atomic<Details> details_{Details::kPending};
  std::atomic<bool> creation_reported_{false};
  std::atomic<uint8_t> last_event_{0};

  std::atomic<uint64_t> collectives_{0};
  std::atomic<uint32_t> splits_{0};
  std::atomic<uint32_t> shrinks_{0};
  // 2 counters per peer ([peer][direction]), published once, never moved.
  std::unique_ptr<std::atomic<uint64_t>[]> p2p_storage_;
  std::atomic<std::atomic<uint64_t>*> p2p_{nullptr};
  std::atomic<uint32_t> peer_capacity_{0};  // stored after p2p_ is published
};

// Every communicator of the process, found by its ncclComm_t handle. Open addressing over a
// fixed array of atomic pointers: a lookup is a hash and a few loads, never a lock. Slots never
// become empty again; a slot whose communicator was destroyed or aborted is reused by a later
// one (the slot stays occupied, so no chain breaks). When a table fills up, creation builds a
// new one from the live communicators and publishes it; readers still in the old one finish
// there (old tables are kept until the registry goes).
class CommRegistry {
 public:
  static constexpr uint32_t kDefaultSlots = 4096;
  explicit CommRegistry(uint32_t slots = kDefaultSlots);  // rounded up to a power of two
  CommRegistry(const CommRegistry&) = delete;
  CommRegistry& operator=(const CommRegistry&) = delete;

  // Registers a communicator, replacing an earlier one with the same handle. nullptr only when
  // out of memory (the communicator's calls are then forwarded, unrecorded).
  Comm* add(const CommFacts& facts) noexcept;
  // Lock-free. nullptr for a handle never registered (or destroyed before a table rebuild).
  Comm* find(uint64_t handle) const noexcept;
  // How many ncclCommInitAll calls came before this one in this process.
  uint32_t next_init_all_index() noexcept { return init_all_calls_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Table {
    explicit Table(uint32_t slot_count);
    uint32_t mask;
    uint32_t occupied = 0;  // slots ever filled; written under the mutex
    std::unique_ptr<std::atomic<Comm*>[]> slots;
  };
  static uint32_t home_slot(const Table& table, uint64_t handle) noexcept;
  // The slot `handle` goes to in `table`, or UINT32_MAX when only an empty slot past the
  // occupancy limit is left.
  static uint32_t slot_for(const Table& table, uint64_t handle) noexcept;
  static void place(Table& table, uint32_t slot, Comm* comm) noexcept;
  Table* rebuild(const Table& full);  // under the mutex

  std::atomic<Table*> table_;
  std::mutex mutex_;  // add(): the tables' writers, tables_ and owned_
  std::vector<std::unique_ptr<Table>> tables_;
  std::vector<std::unique_ptr<Comm>> owned_;
  std::atomic<uint32_t> init_all_calls_{0};
};

// A thread's NCCL group, mirroring NCCL's own per-thread group depth: calls between the
// outermost ncclGroupStart and ncclGroupEnd share a group id and one external correlation id,
// since their kernels launch at that ncclGroupEnd.
class GroupState {
 public:
  // Communicators created inside the open group; NCCL cannot be asked for their rank and size
  // before the group ends. Beyond this many, they are asked for at their first use.
  static constexpr int kMaxPendingComms = 32;

  bool in_group() const noexcept { return depth_ > 0; }
  int32_t depth() const noexcept { return depth_; }
  uint32_t group_id() const noexcept { return group_id_; }
  uint64_t external_id() const noexcept { return external_id_; }

  // After a successful ncclGroupStart. The outermost start takes a new group id and stores
  // `external_id` (0 when nothing will link kernels to it).
  void started(uint64_t external_id) noexcept;
  // Before ncclGroupEnd: true when it ends the outermost group.
  bool ending_outermost() const noexcept { return depth_ == 1; }
  // After ncclGroupEnd (NCCL leaves the group whatever the result, unless none was open).
  void ended() noexcept;

  void add_pending(Comm* comm) noexcept;
  // The communicators created in the open (or just ended) group.
  std::span<Comm* const> pending() const noexcept { return {pending_, static_cast<size_t>(pending_count_)}; }
  void clear_pending() noexcept { pending_count_ = 0; }

  // NCCL's own calls into its API (ncclBcast calls ncclBroadcast through its PLT, so the
  // preloaded definition sees it) are forwarded without a record while this is nonzero.
  int32_t forwarding = 0;

 private:
  int32_t depth_ = 0;
  uint32_t group_id_ = 0;
  uint64_t external_id_ = 0;
  int pending_count_ = 0;
  Comm* pending_[kMaxPendingComms] = {};
};

// The calling thread's group state.
GroupState& this_thread_group() noexcept;
// Process-wide group ids, never 0.
uint32_t next_group_id() noexcept;

}  // namespace pipescope::inject::nccl
