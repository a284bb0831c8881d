#include "pipescope/trace/trace_writer.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <thread>

#include "pipescope/trace/crc32c.h"
#include "process_barrier.h"

namespace pipescope::trace {
namespace {

constexpr const char* kCrashWriting = "the process is writing its crash trace";
// How long a fatal-signal handler waits for another thread to finish a chunk, and for one to
// finish interning a string (the interrupted thread itself never does).
constexpr int kEmergencyFileWaitMs = 500;
constexpr int kEmergencyStringsWaitMs = 50;
// How long close() waits for producers inside an append (normally nanoseconds; longer only while
// one drains its full ring into the file).
constexpr int kCloseWaitMs = 500;

// intern()'s side of the strings gate: a crash handler writing the string table ends soon (it is
// bounded), so ordinary threads wait for it rather than lose a string.
class StringsEntry {
 public:
  explicit StringsEntry(EmergencyGate& gate) noexcept : gate_(gate) {
    while (!gate_.enter()) {
      const timespec one_ms{0, 1'000'000};
      nanosleep(&one_ms, nullptr);
    }
  }
  ~StringsEntry() { gate_.leave(); }
  StringsEntry(const StringsEntry&) = delete;
  StringsEntry& operator=(const StringsEntry&) = delete;

 private:
  EmergencyGate& gate_;
};

constexpr size_t kMinRingBytes = size_t{64} << 10;
constexpr size_t kMaxRecordsChunkBytes = size_t{16} << 20;

uint64_t read_posix_clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::span<const std::byte> bytes_of(const void* p, size_t n) { return {static_cast<const std::byte*>(p), n}; }

RecordHeader header_at(const std::byte* p) {
  RecordHeader h;
  std::memcpy(&h, p, sizeof(h));
  return h;
}

std::string machine_host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

Status validate(const WriterOptions& o) {
  if (o.thread_buffer_bytes < kMinRingBytes || !std::has_single_bit(o.thread_buffer_bytes)) {
    return Error{"thread buffer size must be a power of two of at least 64 KiB"};
  }
  if (o.max_chunk_bytes < kMinRingBytes || o.max_chunk_bytes > kMaxRecordsChunkBytes) {
    return Error{"chunk size must be between 64 KiB and 16 MiB"};
  }
  if (o.max_threads == 0) return Error{"max_threads must be at least 1"};
  if (o.clock == TraceClock::kGpuTimestamp && o.read_trace_clock_ns == nullptr) {
    return Error{"the GPU timestamp clock needs a clock reader"};
  }
  return {};
}

}  // namespace

ThreadBuffer::ThreadBuffer(TraceWriter* writer, size_t capacity)
    : writer_(writer), capacity_(capacity), mask_(capacity - 1), data_(new std::byte[capacity]) {}

bool ThreadBuffer::on_full(const void* record, size_t size) noexcept {
  if (when_full_ == FullBufferPolicy::kDrainInline && writer_->drain_one(*this).ok() &&
      try_append(record, size)) {
    return true;
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

Expected<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, WriterOptions options) {
  if (options.host.empty()) options.host = machine_host_name();
  options.host.resize(std::min(options.host.size(), kMaxHostBytes));
  if (options.pid == 0) options.pid = static_cast<uint32_t>(getpid());
  if (Status s = validate(options); !s.ok()) return s.error();
  auto sink = TraceFileSink::create(path);
  if (!sink.ok()) return sink.error();
  std::unique_ptr<TraceWriter> writer(new TraceWriter(std::move(*sink), std::move(options)));
  std::lock_guard lock(writer->file_mutex_);
  if (Status s = writer->write_header(); !s.ok()) return s.error();
  return writer;
}

TraceWriter::TraceWriter(TraceFileSink sink, WriterOptions options)
    : options_(std::move(options)),
      sink_(std::move(sink)),
      compressor_(options_.zstd_level),
      buffers_(new std::unique_ptr<ThreadBuffer>[options_.max_threads]) {
  if (options_.compress) compress_scratch_.resize(ZstdCompressor::bound(options_.max_chunk_bytes));
}

TraceWriter::~TraceWriter() {
  // A destructor must not throw; close() allocates, and out of memory here loses only the end chunk.
  try {
    (void)close();
  } catch (...) {
  }
}

uint64_t TraceWriter::read_trace_clock() const noexcept {
  if (options_.read_trace_clock_ns != nullptr) return options_.read_trace_clock_ns();
  switch (options_.clock) {
    case TraceClock::kRealtime: return read_posix_clock_ns(CLOCK_REALTIME);
    case TraceClock::kMonotonic: return read_posix_clock_ns(CLOCK_MONOTONIC);
    case TraceClock::kMonotonicRaw: return read_posix_clock_ns(CLOCK_MONOTONIC_RAW);
    case TraceClock::kGpuTimestamp: break;
  }
  return options_.read_trace_clock_ns();
}

ClockAnchorPayload TraceWriter::read_clock_anchor() const noexcept {
  // Bracket the trace clock with two reads of each POSIX clock; the spread bounds the error.
  ClockAnchorPayload anchor{};
  const uint64_t mono_before = read_posix_clock_ns(CLOCK_MONOTONIC);
  anchor.realtime_ns = read_posix_clock_ns(CLOCK_REALTIME);
  anchor.trace_clock_ns = read_trace_clock();
  const uint64_t mono_after = read_posix_clock_ns(CLOCK_MONOTONIC);
  anchor.monotonic_ns = mono_before + (mono_after - mono_before) / 2;
  anchor.uncertainty_ns = mono_after - mono_before;
  return anchor;
}

Status TraceWriter::write_header() {
  FileHeaderFixed header{};
  std::memcpy(header.magic, kFileMagic, sizeof(kFileMagic));
  header.version_major = kFormatMajor;
  header.version_minor = kFormatMinor;
  const size_t host_bytes = options_.host.size();
  header.header_bytes = static_cast<uint32_t>((sizeof(header) + host_bytes + 7) / 8 * 8);
  header.pid = options_.pid;
  header.start_realtime_ns = read_posix_clock_ns(CLOCK_REALTIME);
  header.start_monotonic_ns = read_posix_clock_ns(CLOCK_MONOTONIC);
  header.trace_clock = static_cast<uint32_t>(options_.clock);
  header.host_bytes = static_cast<uint16_t>(host_bytes);
  uint32_t crc = crc32c(&header, kHeaderCrcCoveredBytes);
  header.crc32c = crc32c_extend(crc, options_.host.data(), host_bytes);
  const std::array<std::byte, 8> zeros{};
  const size_t padding = header.header_bytes - sizeof(header) - host_bytes;
  const std::span<const std::byte> pieces[] = {bytes_of(&header, sizeof(header)),
                                               bytes_of(options_.host.data(), host_bytes),
                                               std::span(zeros).first(padding)};
  if (Status s = sink_.append(pieces); !s.ok()) return s;
  return write_small_chunk_locked(ChunkType::kClockAnchor, 1, {});
}

ThreadBuffer* TraceWriter::register_thread() { return register_thread(options_.when_full); }

ThreadBuffer* TraceWriter::register_thread(FullBufferPolicy when_full) {
  std::lock_guard lock(registry_mutex_);
  if (closing_) return nullptr;
  const size_t count = buffer_count_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < count; ++i) {
    ThreadBuffer& b = *buffers_[i];
    // A retired buffer is reused only once drained, so its records stay in order.
    if (b.retired_.load(std::memory_order_acquire) &&
        b.tail_.load(std::memory_order_acquire) == b.head_.load(std::memory_order_relaxed)) {
      b.retired_.store(false, std::memory_order_relaxed);
      b.cached_tail_ = b.tail_.load(std::memory_order_relaxed);
      b.when_full_ = when_full;
      return &b;
    }
  }
  if (count == options_.max_threads) return nullptr;
  buffers_[count].reset(new ThreadBuffer(this, options_.thread_buffer_bytes));
  buffers_[count]->when_full_ = when_full;
  buffer_count_.store(count + 1, std::memory_order_release);
  return buffers_[count].get();
}

void TraceWriter::retire_thread(ThreadBuffer* buffer) {
  if (buffer != nullptr) buffer->retired_.store(true, std::memory_order_release);
}

uint32_t TraceWriter::intern(std::string_view text) {
  text = text.substr(0, kMaxStringBytes);
  std::lock_guard lock(strings_mutex_);
  const StringsEntry entry_guard(strings_gate_);
  auto [it, inserted] = string_ids_.try_emplace(std::string(text), 0);
  if (!inserted) return it->second;
  const auto id = static_cast<uint32_t>(string_ids_.size());
  it->second = id;
  const StringEntryHeader entry{id, static_cast<uint32_t>(text.size())};
  const auto* entry_bytes = reinterpret_cast<const std::byte*>(&entry);
  pending_strings_.insert(pending_strings_.end(), entry_bytes, entry_bytes + sizeof(entry));
  const auto* text_bytes = reinterpret_cast<const std::byte*>(text.data());
  pending_strings_.insert(pending_strings_.end(), text_bytes, text_bytes + text.size());
  return id;
}

Status TraceWriter::write_pending_strings_locked() {
  std::vector<std::byte> strings;
  {
    std::lock_guard lock(strings_mutex_);
    const StringsEntry entry_guard(strings_gate_);
    strings.swap(pending_strings_);
  }
  // Split into chunks at entry boundaries so that no chunk exceeds the payload limit.
  size_t begin = 0;
  while (begin < strings.size()) {
    size_t end = begin;
    uint32_t entries = 0;
    while (end < strings.size()) {
      StringEntryHeader e;
      std::memcpy(&e, strings.data() + end, sizeof(e));
      const size_t entry_bytes = sizeof(e) + e.length_bytes;
      if (entries > 0 && end - begin + entry_bytes > options_.max_chunk_bytes) break;
      end += entry_bytes;
      ++entries;
    }
    if (Status s = write_small_chunk_locked(ChunkType::kStrings, entries,
                                            std::span(strings).subspan(begin, end - begin));
        !s.ok()) {
      return s;
    }
    begin = end;
  }
  return {};
}

Status TraceWriter::write_small_chunk_locked(ChunkType type, uint32_t items,
                                             std::span<const std::byte> payload) {
  if (payload.size() > kMaxChunkPayloadBytes) return Error{"chunk payload over 64 MiB"};
  ClockAnchorPayload anchor{};
  if (type == ChunkType::kClockAnchor) {
    anchor = read_clock_anchor();
    payload = bytes_of(&anchor, sizeof(anchor));
  }
  const ChunkHeader header = seal_chunk(type, 0, static_cast<uint32_t>(payload.size()), items, payload);
  const std::span<const std::byte> pieces[] = {bytes_of(&header, sizeof(header)), payload};
  Status s = sink_.append(pieces);
  if (s.ok()) ++chunks_written_;
  return s;
}

Status TraceWriter::write_records_chunk_locked(std::span<const std::byte> records, uint32_t count) {
  if (sink_.failed()) {
    records_discarded_ += count;
    return Error{"trace file is no longer writable"};
  }
  // Data that does not shrink (or a compressor failure) is stored raw, so a stored payload
  // never exceeds its raw size and the chunk limit holds.
  std::span<const std::byte> stored = records;
  uint16_t flags = 0;
  if (options_.compress) {
    auto compressed = compressor_.compress(records, compress_scratch_);
    if (compressed.ok() && *compressed < records.size()) {
      stored = std::span<const std::byte>(compress_scratch_).first(*compressed);
      flags = kChunkFlagZstd;
    }
  }
  const ChunkHeader header =
      seal_chunk(ChunkType::kRecords, flags, static_cast<uint32_t>(records.size()), count, stored);
  const std::span<const std::byte> pieces[] = {bytes_of(&header, sizeof(header)), stored};
  Status s = sink_.append(pieces);
  if (s.ok()) {
    records_written_ += count;
    ++chunks_written_;
  } else {
    records_discarded_ += count;
  }
  return s;
}

// Frames [tail, head_snapshot) of one ring. Runs with file_mutex_ held: the drainer is the
// ring's only consumer, so tail_ needs no atomic read-modify-write.
Status TraceWriter::drain_locked(ThreadBuffer& buffer, uint64_t head_snapshot) {
  uint64_t tail = buffer.tail_.load(std::memory_order_relaxed);
  Status result;
  while (tail < head_snapshot) {
    const size_t pos = tail & buffer.mask_;
    const size_t contiguous = std::min<uint64_t>(head_snapshot - tail, buffer.capacity_ - pos);
    const std::byte* base = buffer.data_.get() + pos;
    size_t used = 0;
    size_t skipped = 0;
    uint32_t count = 0;
    while (used < contiguous) {
      const RecordHeader h = header_at(base + used);
      if (h.kind == static_cast<uint16_t>(RecordKind::kInvalid)) {  // padding up to the wrap
        skipped = contiguous - used;
        break;
      }
      if (used + h.size_bytes > options_.max_chunk_bytes) break;
      used += h.size_bytes;
      ++count;
    }
    if (count > 0) {
      Status s = write_records_chunk_locked(std::span(base, used), count);
      if (!s.ok() && result.ok()) result = s;
    }
    tail += used + skipped;
  }
  buffer.tail_.store(tail, std::memory_order_release);
  return result;
}

Status TraceWriter::drain_one(ThreadBuffer& buffer) {
  std::lock_guard lock(file_mutex_);
  const GateEntry gate(file_gate_);
  if (!gate.entered()) return Error{kCrashWriting};
  if (closed_) return Error{"trace writer is closed"};
  // Head first, strings second: every string a drained record names was interned before
  // the record was published, so it is in the pending set taken after the snapshot.
  const uint64_t head = buffer.head_.load(std::memory_order_acquire);
  if (Status s = write_pending_strings_locked(); !s.ok()) return s;
  return drain_locked(buffer, head);
}

Status TraceWriter::flush() {
  std::lock_guard lock(file_mutex_);
  const GateEntry gate(file_gate_);
  if (!gate.entered() || closed_) return {};
  const size_t count = buffer_count_.load(std::memory_order_acquire);
  std::vector<uint64_t> heads(count);
  for (size_t i = 0; i < count; ++i) heads[i] = buffers_[i]->head_.load(std::memory_order_acquire);
  Status result = write_pending_strings_locked();
  for (size_t i = 0; i < count; ++i) {
    Status s = drain_locked(*buffers_[i], heads[i]);
    if (!s.ok() && result.ok()) result = s;
  }
  if (result.ok()) result = write_small_chunk_locked(ChunkType::kClockAnchor, 1, {});
  return result;
}

Status TraceWriter::write_process_info(const ProcessInfo& info) {
  const std::vector<std::byte> payload = encode_process_info(info);
  std::lock_guard lock(file_mutex_);
  const GateEntry gate(file_gate_);
  if (!gate.entered()) return Error{kCrashWriting};
  if (closed_) return Error{"trace writer is closed"};
  return write_small_chunk_locked(ChunkType::kProcessInfo, 0, payload);
}

Status TraceWriter::write_clock_anchor() {
  std::lock_guard lock(file_mutex_);
  const GateEntry gate(file_gate_);
  if (!gate.entered()) return Error{kCrashWriting};
  if (closed_) return Error{"trace writer is closed"};
  return write_small_chunk_locked(ChunkType::kClockAnchor, 1, {});
}

Status TraceWriter::close() {
  {
    std::lock_guard lock(registry_mutex_);
    closing_ = true;
    const size_t count = buffer_count_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < count; ++i) buffers_[i]->closed_.store(true, std::memory_order_relaxed);
  }
  wait_for_appends_in_progress();
  Status result = flush();
  std::lock_guard lock(file_mutex_);
  const GateEntry gate(file_gate_);
  if (!gate.entered()) return Error{kCrashWriting};
  if (closed_) return result;
  closed_ = true;
  if (!sink_.failed()) {
    EndPayload end{};
    end.records_written = records_written_;
    end.records_dropped = records_discarded_;
    const size_t count = buffer_count_.load(std::memory_order_acquire);
    for (size_t i = 0; i < count; ++i) end.records_dropped += buffers_[i]->dropped_records();
    end.chunks_written = chunks_written_;
    end.end_realtime_ns = read_posix_clock_ns(CLOCK_REALTIME);
    Status s = write_small_chunk_locked(ChunkType::kEnd, 1, bytes_of(&end, sizeof(end)));
    if (!s.ok() && result.ok()) result = s;
  }
  sink_.close();
  return result;
}

// After the barrier a producer either sees its ring closed or is seen busy here, so the final
// drain that follows finds every record an append accepted (ThreadBuffer::append_bytes). Bounded:
// a thread stopped inside an append (a signal handler that ends the process on top of it) must
// not hang the exit; its record may then be lost, uncounted.
void TraceWriter::wait_for_appends_in_progress() noexcept {
  process_wide_barrier();
  const size_t count = buffer_count_.load(std::memory_order_acquire);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kCloseWaitMs);
  for (size_t i = 0; i < count; ++i) {
    while (buffers_[i]->appending_.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > deadline) return;
      std::this_thread::yield();
    }
  }
}

bool TraceWriter::write_chunk_quietly_locked(ChunkType type, uint32_t items,
                                             std::span<const std::byte> payload) noexcept {
  const ChunkHeader header = seal_chunk(type, 0, static_cast<uint32_t>(payload.size()), items, payload);
  const std::span<const std::byte> pieces[] = {bytes_of(&header, sizeof(header)), payload};
  if (!sink_.append_quietly(pieces)) return false;
  ++chunks_written_;
  return true;
}

uint64_t TraceWriter::emergency_write(std::span<const std::byte> extra_records,
                                      uint32_t extra_count) noexcept {
  if (!file_gate_.claim(kEmergencyFileWaitMs)) return 0;
  struct Release {
    EmergencyGate& gate;
    ~Release() { gate.release(); }
  } release_file{file_gate_};
  if (closed_ || sink_.failed()) return 0;
  // Strings first, so that the records' names resolve. Entries are whole: intern() appends
  // inside strings_gate_, and a thread interrupted inside it never leaves (then no strings).
  if (strings_gate_.claim(kEmergencyStringsWaitMs)) {
    const Release release_strings{strings_gate_};
    size_t begin = 0;
    while (begin < pending_strings_.size()) {
      size_t end = begin;
      uint32_t entries = 0;
      while (end < pending_strings_.size()) {
        StringEntryHeader e;
        std::memcpy(&e, pending_strings_.data() + end, sizeof(e));
        const size_t entry_bytes = sizeof(e) + e.length_bytes;
        if (entries > 0 && end - begin + entry_bytes > options_.max_chunk_bytes) break;
        end += entry_bytes;
        ++entries;
      }
      if (!write_chunk_quietly_locked(ChunkType::kStrings, entries,
                                      std::span(pending_strings_).subspan(begin, end - begin))) {
        return 0;
      }
      begin = end;
    }
    pending_strings_.clear();  // keeps the capacity: no deallocation here
  }
  uint64_t written = 0;
  const size_t count = buffer_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    ThreadBuffer& buffer = *buffers_[i];
    const uint64_t head = buffer.head_.load(std::memory_order_acquire);
    uint64_t tail = buffer.tail_.load(std::memory_order_relaxed);
    while (tail < head) {
      const size_t pos = tail & buffer.mask_;
      const size_t contiguous = std::min<uint64_t>(head - tail, buffer.capacity_ - pos);
      const std::byte* base = buffer.data_.get() + pos;
      size_t used = 0;
      size_t skipped = 0;
      uint32_t records = 0;
      while (used < contiguous) {
        const RecordHeader h = header_at(base + used);
        if (h.kind == static_cast<uint16_t>(RecordKind::kInvalid)) {
          skipped = contiguous - used;
          break;
        }
        if (h.size_bytes < sizeof(RecordHeader) || used + h.size_bytes > options_.max_chunk_bytes) break;
        used += h.size_bytes;
        ++records;
      }
      if (records == 0 && skipped == 0) break;  // nothing sane to frame
      if (records > 0) {
        if (!write_chunk_quietly_locked(ChunkType::kRecords, records, std::span(base, used))) return written;
        written += records;
        records_written_ += records;
      }
      tail += used + skipped;
    }
    buffer.tail_.store(tail, std::memory_order_release);
  }
  if (extra_count > 0 && !extra_records.empty() && extra_records.size() <= options_.max_chunk_bytes &&
      write_chunk_quietly_locked(ChunkType::kRecords, extra_count, extra_records)) {
    written += extra_count;
    records_written_ += extra_count;
  }
  const ClockAnchorPayload anchor = read_clock_anchor();
  (void)write_chunk_quietly_locked(ChunkType::kClockAnchor, 1, bytes_of(&anchor, sizeof(anchor)));
  return written;
}

uint64_t TraceWriter::records_written() const {
  std::lock_guard lock(file_mutex_);
  return records_written_;
}

uint64_t TraceWriter::records_dropped() const {
  std::lock_guard lock(file_mutex_);
  uint64_t dropped = records_discarded_;
  const size_t count = buffer_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) dropped += buffers_[i]->dropped_records();
  return dropped;
}

}  // namespace pipescope::trace
