// Writes one trace file, fed by many threads. Each thread appends records to its own
// single-producer ring (ThreadBuffer): a bounds check, a memcpy and one release store, no
// lock, no allocation. Whoever drains (a flusher thread, or the producer itself when its ring
// is full) frames the ring's contents into chunks under the writer's mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/trace/chunk_codec.h"
#include "pipescope/trace/emergency_gate.h"
#include "pipescope/trace/format.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_file_sink.h"

namespace pipescope::trace {

class TraceWriter;

// What a producer does when its ring is full.
enum class FullBufferPolicy {
  kDrainInline,  // frame and write the ring on the producer's thread (tools, benchmarks)
  kDrop,         // count the record as dropped and return at once (a training thread)
};

using ClockReader = uint64_t (*)();

struct WriterOptions {
  std::string host;  // empty: the machine's host name
  uint32_t pid = 0;  // 0: this process
  TraceClock clock = TraceClock::kMonotonic;
  // Reads `clock` in ns as the records' timestamps do, for the clock anchors. Required for
  // kGpuTimestamp; null for a POSIX clock: the writer reads it with clock_gettime. (The profiler
  // sets it: its CLOCK_MONOTONIC is read from the TSC, and the anchors then measure how closely.)
  ClockReader read_trace_clock_ns = nullptr;
  bool compress = false;
  int zstd_level = 1;
  size_t thread_buffer_bytes = size_t{1} << 20;  // per thread; a power of two >= 64 KiB
  size_t max_chunk_bytes = size_t{1} << 20;      // raw payload per records chunk, 64 KiB..16 MiB
  size_t max_threads = 256;
  FullBufferPolicy when_full = FullBufferPolicy::kDrainInline;
};

class ThreadBuffer {
 public:
  // Appends one record (a struct from records.h, made with make_record<R>()).
  template <class R>
  bool append(const R& record) noexcept {
    return append_bytes(&record, sizeof(R));
  }

  // `size` is a multiple of 8, at least 8, matches the record header, and is at most a
  // quarter of the ring (records are <= 88 bytes; rings >= 64 KiB). False when the record
  // was dropped: the ring was full under kDrop, or the writer is closed.
  bool append_bytes(const void* record, size_t size) noexcept {
    // Marked busy before the closed flag is read; close() sets the flag, passes a process-wide
    // barrier (process_barrier.h) and waits for busy rings, so each record is either written by
    // its final drain or refused here and counted. The compiler barrier is all this side needs.
    appending_.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    bool appended = false;
    if (closed_.load(std::memory_order_relaxed)) [[unlikely]] {
      dropped_.fetch_add(1, std::memory_order_relaxed);
    } else {
      appended = try_append(record, size) || on_full(record, size);
    }
    appending_.store(false, std::memory_order_release);
    return appended;
  }

  uint64_t dropped_records() const { return dropped_.load(std::memory_order_relaxed); }

  // From now on a full ring is written out on this thread rather than dropping records. Called
  // by the producer thread only (the policy is read in its own full path).
  void drain_inline_when_full() noexcept { when_full_ = FullBufferPolicy::kDrainInline; }

 private:
  friend class TraceWriter;
  ThreadBuffer(TraceWriter* writer, size_t capacity);
  bool on_full(const void* record, size_t size) noexcept;
  std::pair<size_t, size_t> unread_span(uint64_t tail, uint64_t head) const noexcept;

  bool try_append(const void* record, size_t size) noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const size_t pos = head & mask_;
    // A record never wraps: the rest of the ring becomes padding, which drains skip.
    const size_t pad = pos + size > capacity_ ? capacity_ - pos : 0;
    const uint64_t need = pad + size;
    if (capacity_ - (head - cached_tail_) < need) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (capacity_ - (head - cached_tail_) < need) return false;
    }
    if (pad != 0) {
      const RecordHeader padding{static_cast<uint16_t>(RecordKind::kInvalid), static_cast<uint16_t>(pad)};
      std::memcpy(data_.get() + pos, &padding, sizeof(padding));
    }
    std::memcpy(data_.get() + ((head + pad) & mask_), record, size);
    head_.store(head + need, std::memory_order_release);
    return true;
  }

  TraceWriter* writer_;
  FullBufferPolicy when_full_ = FullBufferPolicy::kDrainInline;
  size_t capacity_;
  size_t mask_;
  std::unique_ptr<std::byte[]> data_;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the producer only
  uint64_t cached_tail_ = 0;                   // producer's last view of tail_
  std::atomic<bool> appending_{false};         // the producer is inside append_bytes()
  std::atomic<bool> closed_{false};            // set once by TraceWriter::close()
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the drainer only
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> retired_{false};
};

class TraceWriter {
 public:
  // Creates the file exclusively and writes the header and a first clock anchor.
  static Expected<std::unique_ptr<TraceWriter>> create(const std::string& path, WriterOptions options);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Once per producing thread. Returns nullptr when max_threads buffers are in use or the
  // writer is closing. The buffer follows `when_full`, or the writer's policy.
  ThreadBuffer* register_thread();
  ThreadBuffer* register_thread(FullBufferPolicy when_full);
  // The thread will not append again; its buffer is drained and may be handed to a new thread.
  void retire_thread(ThreadBuffer* buffer);

  // Id of `text` in this file's string table (1, 2, ...), written before any record that
  // was appended after this call returned. Text over kMaxStringBytes is cut to that length.
  // Thread-safe; takes a lock, so cache ids.
  uint32_t intern(std::string_view text);

  Status write_process_info(const ProcessInfo& info);
  Status write_clock_anchor();
  // Drains every thread's ring, pending strings first, then writes a clock anchor.
  Status flush();
  // flush(), an end chunk, and the file closed. Later calls do nothing.
  Status close();
  // For a fatal signal handler: writes what the rings and the string table hold, uncompressed,
  // with no allocation and no lock: async-signal-safe (emergency_gate.h). Waits up to half a
  // second for a chunk another thread is writing, and gives up when the file stays busy (the
  // interrupted thread was writing it) or another handler is writing. Ordinary writes that
  // meet it back off. `extra_records` (whole records, `extra_count` of them, made by the caller
  // in memory of its own) are written after the rings. Returns the number of records written.
  uint64_t emergency_write(std::span<const std::byte> extra_records = {}, uint32_t extra_count = 0) noexcept;

  uint64_t records_written() const;
  uint64_t records_dropped() const;
  const std::string& path() const { return sink_.path(); }

 private:
  friend class ThreadBuffer;
  TraceWriter(TraceFileSink sink, WriterOptions options);
  Status write_header();
  Status drain_locked(ThreadBuffer& buffer, uint64_t head_snapshot);
  Status drain_one(ThreadBuffer& buffer);  // from a producer whose ring is full
  void wait_for_appends_in_progress() noexcept;
  Status write_pending_strings_locked();
  Status write_records_chunk_locked(std::span<const std::byte> records, uint32_t count);
  Status write_small_chunk_locked(ChunkType type, uint32_t items, std::span<const std::byte> payload);
  bool write_chunk_quietly_locked(ChunkType type, uint32_t items,
                                  std::span<const std::byte> payload) noexcept;
  uint64_t read_trace_clock() const noexcept;
  ClockAnchorPayload read_clock_anchor() const noexcept;

  WriterOptions options_;
  mutable std::mutex file_mutex_;  // the sink, the scratch buffer, the counters below
  EmergencyGate file_gate_;        // the same, between file_mutex_'s holders and a crash handler
  TraceFileSink sink_;
  ZstdCompressor compressor_;
  std::vector<std::byte> compress_scratch_;
  uint64_t records_written_ = 0;
  uint64_t records_discarded_ = 0;  // drained after the file failed
  uint64_t chunks_written_ = 0;
  bool closed_ = false;

  std::mutex registry_mutex_;  // buffer registration, and closing_
  bool closing_ = false;
  // A fixed array so that drains can walk it while a thread registers: entries [0, count)
  // are published by the release store to buffer_count_ and never move.
  std::unique_ptr<std::unique_ptr<ThreadBuffer>[]> buffers_;
  std::atomic<size_t> buffer_count_{0};

  std::mutex strings_mutex_;
  EmergencyGate strings_gate_;  // pending_strings_, between strings_mutex_'s holders and a crash handler
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::vector<std::byte> pending_strings_;
};

}  // namespace pipescope::trace
