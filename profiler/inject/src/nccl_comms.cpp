#include "nccl_comms.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

namespace pipescope::inject::nccl {
namespace {

// FNV-1a over the input, then a splitmix64 finalizer so that nearby inputs (split colors 0, 1,
// 2, ...) spread over all 64 bits. Not cryptographic: members only need to agree, and distinct
// communicators of one job to differ.
class Hasher {
 public:
  explicit Hasher(std::string_view tag) { add_bytes(tag.data(), tag.size()); }

  void add_bytes(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      state_ ^= bytes[i];
      state_ *= 0x100000001b3ull;
    }
  }
  template <class T>
  void add(T value) {
    add_bytes(&value, sizeof(value));
  }

  uint64_t finish() const {
    uint64_t z = state_ + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z != 0 ? z : 1;  // 0 is "no communicator"
  }

 private:
  uint64_t state_ = 0xcbf29ce484222325ull;
};

std::atomic<uint32_t> g_next_group_id{1};
thread_local GroupState t_group;

}  // namespace

uint64_t identity_of_unique_ids(std::span<const std::byte> id_bytes) noexcept {
  Hasher hasher("nccl-unique-id");
  hasher.add_bytes(id_bytes.data(), id_bytes.size());
  return hasher.finish();
}

uint64_t identity_of_split(uint64_t parent_identity, int32_t color, uint32_t split_index) noexcept {
  Hasher hasher("nccl-split");
  hasher.add(parent_identity);
  hasher.add(color);
  hasher.add(split_index);
  return hasher.finish();
}

uint64_t identity_of_shrink(uint64_t parent_identity, std::span<const int32_t> excluded_ranks,
                            uint32_t shrink_index) noexcept {
  Hasher hasher("nccl-shrink");
  hasher.add(parent_identity);
  hasher.add(shrink_index);
  // Order-insensitive without allocating: hash the distinct ranks in increasing order by
  // repeatedly taking the smallest one above the last (shrink is rare, the list short).
  int64_t last = INT64_MIN;
  for (;;) {
    int64_t smallest = INT64_MAX;
    for (const int32_t rank : excluded_ranks) {
      if (rank > last && rank < smallest) smallest = rank;
    }
    if (smallest == INT64_MAX) break;
    hasher.add(static_cast<int32_t>(smallest));
    last = smallest;
  }
  return hasher.finish();
}

uint64_t identity_of_init_all(std::string_view host, int64_t pid, uint32_t call_index) noexcept {
  Hasher hasher("nccl-init-all");
  hasher.add(static_cast<uint64_t>(host.size()));
  hasher.add_bytes(host.data(), host.size());
  hasher.add(pid);
  hasher.add(call_index);
  return hasher.finish();
}

Comm::Comm(const CommFacts& facts)
    : handle_(facts.handle),
      identity_(facts.identity),
      parent_identity_(facts.parent_identity),
      creation_event_(facts.event),
      color_(facts.color),
      split_index_(facts.split_index),
      start_ns_(facts.start_ns),
      end_ns_(facts.end_ns),
      rank_(facts.rank),
      size_(facts.size),
      device_(facts.device) {
  if (facts.peer_capacity > 0) allocate_p2p(facts.peer_capacity);
}

bool Comm::claim_details() noexcept {
  Details expected = Details::kPending;
  return details_.compare_exchange_strong(expected, Details::kClaimed, std::memory_order_acq_rel);
}

void Comm::complete_details(int32_t rank, int32_t size, uint32_t device) noexcept {
  if (rank >= 0) rank_.store(rank, std::memory_order_relaxed);
  if (size > 0) size_.store(size, std::memory_order_relaxed);
  if (device != trace::kUnknownDevice) device_.store(device, std::memory_order_relaxed);
  if (size > 0 && p2p_.load(std::memory_order_acquire) == nullptr) allocate_p2p(static_cast<uint32_t>(size));
  details_.store(Details::kKnown, std::memory_order_release);
}

void Comm::release_details_claim() noexcept {
  Details expected = Details::kClaimed;
  details_.compare_exchange_strong(expected, Details::kPending, std::memory_order_acq_rel);
}

bool Comm::handle_released() const noexcept {
  const uint8_t event = last_event();
  return event == static_cast<uint8_t>(trace::NcclCommEvent::kDestroy) ||
         event == static_cast<uint8_t>(trace::NcclCommEvent::kAbort);
}

void Comm::allocate_p2p(uint32_t peers) noexcept {
  // Called by the creating thread, or by the one thread holding the details claim.
  const size_t counters = size_t{2} * peers;
  p2p_storage_.reset(new (std::nothrow) std::atomic<uint64_t>[counters]);
  if (p2p_storage_ == nullptr) return;
  for (size_t i = 0; i < counters; ++i) p2p_storage_[i].store(0, std::memory_order_relaxed);
  p2p_.store(p2p_storage_.get(), std::memory_order_release);
  peer_capacity_.store(peers, std::memory_order_release);
}

std::atomic<uint64_t>* Comm::p2p_counter(int32_t peer, P2pDirection direction) const noexcept {
  const uint32_t peers = peer_capacity_.load(std::memory_order_acquire);
  if (peer < 0 || static_cast<uint32_t>(peer) >= peers) return nullptr;
  std::atomic<uint64_t>* counters = p2p_.load(std::memory_order_acquire);
  return &counters[size_t{2} * static_cast<uint32_t>(peer) + static_cast<uint8_t>(direction)];
}

uint64_t Comm::next_p2p(int32_t peer, P2pDirection direction) noexcept {
  std::atomic<uint64_t>* counter = p2p_counter(peer, direction);
  return counter != nullptr ? counter->fetch_add(1, std::memory_order_relaxed) : kNcclUnknownSequence;
}

uint64_t Comm::peek_p2p(int32_t peer, P2pDirection direction) const noexcept {
  std::atomic<uint64_t>* counter = p2p_counter(peer, direction);
  return counter != nullptr ? counter->load(std::memory_order_relaxed) : kNcclUnknownSequence;
}

CommRegistry::Table::Table(uint32_t slot_count)
    : mask(std::bit_ceil(std::max<uint32_t>(slot_count, 16)) - 1), slots(new std::atomic<Comm*>[mask + 1]) {
  for (uint32_t i = 0; i <= mask; ++i) slots[i].store(nullptr, std::memory_order_relaxed);
}

CommRegistry::CommRegistry(uint32_t slots) {
  tables_.push_back(std::make_unique<Table>(slots));
  table_.store(tables_.back().get(), std::memory_order_release);
}

uint32_t CommRegistry::home_slot(const Table& table, uint64_t handle) noexcept {
  // Handles are heap pointers: the low bits are alignment, the high bits mostly equal.
  return static_cast<uint32_t>(((handle >> 4) * 0x9e3779b97f4a7c15ull) >> 32) & table.mask;
}

uint32_t CommRegistry::slot_for(const Table& table, uint64_t handle) noexcept {
  // The first slot on the handle's chain that is empty, holds the same handle, or holds a
  // communicator whose handle was released. Lookups walk the same chain and stop at an empty
  // slot; every slot before the chosen one is occupied, so the new entry stays reachable.
  for (uint32_t probe = 0; probe <= table.mask; ++probe) {
    const uint32_t slot = (home_slot(table, handle) + probe) & table.mask;
    const Comm* held = table.slots[slot].load(std::memory_order_relaxed);
    if (held == nullptr) {
      // Keep chains short: at most three quarters of the slots ever occupied.
      return table.occupied < (table.mask + 1) / 4 * 3 ? slot : UINT32_MAX;
    }
    if (held->handle() == handle || held->handle_released()) return slot;
  }
  return UINT32_MAX;
}

void CommRegistry::place(Table& table, uint32_t slot, Comm* comm) noexcept {
  if (table.slots[slot].load(std::memory_order_relaxed) == nullptr) ++table.occupied;
  table.slots[slot].store(comm, std::memory_order_release);
}

CommRegistry::Table* CommRegistry::rebuild(const Table& full) {
  std::vector<Comm*> live;
  for (uint32_t i = 0; i <= full.mask; ++i) {
    Comm* comm = full.slots[i].load(std::memory_order_relaxed);
    if (comm != nullptr && !comm->handle_released()) live.push_back(comm);
  }
  // Twice the room the live communicators (and the one being added) need.
  uint32_t slot_count = full.mask + 1;
  while (slot_count / 4 < live.size() + 1 && slot_count < (1u << 24)) slot_count *= 2;
  auto table = std::make_unique<Table>(slot_count);
  for (Comm* comm : live) place(*table, slot_for(*table, comm->handle()), comm);
  tables_.push_back(std::move(table));
  return tables_.back().get();
}

Comm* CommRegistry::add(const CommFacts& facts) noexcept {
  try {
    std::lock_guard lock(mutex_);
    Table* table = table_.load(std::memory_order_relaxed);
    uint32_t slot = slot_for(*table, facts.handle);
    bool rebuilt = false;
    if (slot == UINT32_MAX) {
      table = rebuild(*table);
      slot = slot_for(*table, facts.handle);
      rebuilt = true;
      if (slot == UINT32_MAX) return nullptr;  // 2^22 live communicators
    }
    owned_.push_back(std::make_unique<Comm>(facts));
    Comm* comm = owned_.back().get();
    place(*table, slot, comm);
    // Published with the new entry in it: a thread that learns the handle from the creating
    // thread finds it.
    if (rebuilt) table_.store(table, std::memory_order_release);
    return comm;
  } catch (...) {
    return nullptr;
  }
}

Comm* CommRegistry::find(uint64_t handle) const noexcept {
  const Table& table = *table_.load(std::memory_order_acquire);
  uint32_t slot = home_slot(table, handle);
  for (uint32_t probe = 0; probe <= table.mask; ++probe) {
    Comm* held = table.slots[slot].load(std::memory_order_acquire);
    if (held == nullptr) return nullptr;
    if (held->handle() == handle) return held;
    slot = (slot + 1) & table.mask;
  }
  return nullptr;
}

void GroupState::started(uint64_t external_id) noexcept {
  if (depth_++ == 0) {
    group_id_ = next_group_id();
    external_id_ = external_id;
  }
}

void GroupState::ended() noexcept {
  if (depth_ == 0) return;  // NCCL refuses an unmatched ncclGroupEnd and changes nothing
  if (--depth_ == 0) {
    group_id_ = 0;
    external_id_ = 0;
  }
}

void GroupState::add_pending(Comm* comm) noexcept {
  if (pending_count_ < kMaxPendingComms) pending_[pending_count_++] = comm;
}

GroupState& this_thread_group() noexcept { return t_group; }

uint32_t next_group_id() noexcept {
  uint32_t id = g_next_group_id.fetch_add(1, std::memory_order_relaxed);
  if (id == 0) id = g_next_group_id.fetch_add(1, std::memory_order_relaxed);  // after 2^32 groups
  return id;
}

}  // namespace pipescope::inject::nccl
