// A per-thread map from string contents to trace string ids, so that hot paths (NVTX range
// names, CUPTI kernel names) pay a hash and a compare instead of the writer's lock. Fixed
// capacity, allocated on a thread's first miss; when full it starts over.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace pipescope::inject {

class StringCache {
 public:
  struct Entry {
    uint32_t id = 0;   // trace string id; 0 = unknown
    uint32_t tag = 0;  // the caller's classification of the string (e.g. "is a step range")
  };

  // The cached entry of `text`, or `make(text)` (an Entry) stored and returned on a miss.
  // `generation` changes when ids are no longer valid (a new trace file after fork).
  template <class Make>
  Entry find_or_add(std::string_view text, uint32_t generation, Make&& make) {
    if (generation != generation_) reset(generation);
    const uint64_t hash = hash_of(text);
    if (slots_ != nullptr) {
      for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
        Slot& slot = slots_[(hash + probe) & (kSlots - 1)];
        if (slot.length == kEmpty) break;
        if (slot.hash == hash && slot.length == text.size() &&
            std::memcmp(arena_.get() + slot.offset, text.data(), text.size()) == 0) {
          return slot.entry;
        }
      }
    }
    const Entry entry = make(text);
    if (entry.id != 0) insert(hash, text, entry);
    return entry;
  }

  static uint64_t hash_of(std::string_view text) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
    for (const char c : text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    return h;
  }

 private:
  static constexpr uint32_t kSlots = 2048;  // a power of two
  static constexpr uint32_t kMaxProbes = 16;
  static constexpr uint32_t kArenaBytes = 128u << 10;
  static constexpr uint32_t kEmpty = UINT32_MAX;

  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t length = kEmpty;
    Entry entry;
  };

  void reset(uint32_t generation) {
    generation_ = generation;
    used_ = 0;
    if (slots_ != nullptr) {
      for (uint32_t i = 0; i < kSlots; ++i) slots_[i] = Slot{};
    }
  }

  void insert(uint64_t hash, std::string_view text, Entry entry) {
    if (text.size() > kArenaBytes / 4) return;  // rare giant names are not cached
    if (slots_ == nullptr) {
      slots_.reset(new Slot[kSlots]);
      arena_.reset(new char[kArenaBytes]);
    }
    if (used_ + text.size() > kArenaBytes) reset(generation_);
    for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
      Slot& slot = slots_[(hash + probe) & (kSlots - 1)];
      if (slot.length != kEmpty) continue;
      std::memcpy(arena_.get() + used_, text.data(), text.size());
      slot = Slot{hash, used_, static_cast<uint32_t>(text.size()), entry};
      used_ += static_cast<uint32_t>(text.size());
      return;
    }
    // A crowded neighbourhood: start over rather than probe further on every lookup.
    reset(generation_);
  }

  uint32_t generation_ = 0;
  uint32_t used_ = 0;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<char[]> arena_;
};

}  // namespace pipescope::inject
