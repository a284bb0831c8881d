// Trace records held in order until they can be written: their bytes appended to chunks of a
// few MiB, never moved once written (a growing vector copies and faults in its records again at
// every doubling, which was a twentieth of a Kineto conversion's time). `clear()` keeps the chunks
// for the next document, so a worker's later documents write into pages it already has.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "pipescope/trace/records.h"

namespace pipescope::analysis {

class RecordSpool {
 public:
  static constexpr size_t kChunkBytes = size_t{4} << 20;

  // A record made with trace::make_record<R>(): its header says its size.
  template <class R>
  void append(const R& record) {
    static_assert(sizeof(R) <= kChunkBytes && sizeof(R) % 8 == 0);
    if (chunk_ == chunks_.size() || used_ + sizeof(R) > kChunkBytes) next_chunk();
    std::memcpy(chunks_[chunk_].bytes.get() + used_, &record, sizeof(R));
    used_ += sizeof(R);
    chunks_[chunk_].used = used_;
  }

  // Each record's bytes and size, in the order they came.
  template <class F>
  void for_each(F&& visit) const {
    for (const Chunk& chunk : chunks_) {
      const std::byte* bytes = chunk.bytes.get();
      for (size_t at = 0; at < chunk.used;) {
        trace::RecordHeader header;
        std::memcpy(&header, bytes + at, sizeof(header));
        visit(static_cast<const void*>(bytes + at), size_t{header.size_bytes});
        at += header.size_bytes;
      }
    }
  }

  // Empty again; the chunks stay for what comes next.
  void clear() {
    for (Chunk& c : chunks_) c.used = 0;
    chunk_ = chunks_.size();
    used_ = 0;
  }

  bool empty() const { return chunks_.empty() || chunks_.front().used == 0; }

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> bytes;
    size_t used = 0;
  };

  void next_chunk() {
    chunk_ = chunk_ == chunks_.size() ? 0 : chunk_ + 1;
    if (chunk_ == chunks_.size())
      chunks_.push_back(Chunk{std::make_unique_for_overwrite<std::byte[]>(kChunkBytes), 0});
    used_ = 0;
  }

  std::vector<Chunk> chunks_;
  size_t chunk_ = 0;  // the chunk being written; chunks_.size() before the first record
  size_t used_ = 0;   // of that chunk
};

}  // namespace pipescope::analysis
