// Reads a trace from bytes in memory (a mapped file, or a fuzzer's input). It never trusts
// a length: every chunk is bounds-checked and checksummed, every record size validated, and
// reading stops cleanly at the first truncated or damaged chunk with a note of how far it got.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/trace/chunk_codec.h"
#include "pipescope/trace/format.h"
#include "pipescope/trace/records.h"

namespace pipescope::trace {

struct FileHeader {
  uint16_t version_major = 0;
  uint16_t version_minor = 0;
  uint32_t header_bytes = 0;
  uint32_t pid = 0;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  TraceClock trace_clock = TraceClock::kMonotonic;
  std::string host;
};

enum class StopReason {
  kEndOfData,  // every byte belonged to a whole, valid chunk
  kTruncated,  // the data ends inside a chunk (a writer killed mid-write, or a copy cut short)
  kCorrupt,    // a chunk failed its checks; nothing after it is read
};
const char* stop_reason_name(StopReason reason);

struct ChunkView {
  ChunkType type;  // may be a type this build does not know (a newer minor version)
  uint32_t item_count;
  uint64_t file_offset;                // of the chunk header
  std::span<const std::byte> payload;  // decompressed; valid until the next next_chunk()
};

struct RecordView {
  RecordKind kind;  // may be a kind this build does not know
  std::span<const std::byte> bytes;

  // Copies the record into `out` when it is of R's kind; false otherwise. A record from a
  // newer minor version may be longer (its tail is ignored); one from an older minor version,
  // once a struct has grown, shorter (the missing fields read as zero). The decoder has
  // already refused records shorter than their kind's 1.0 size.
  template <class R>
  bool decode(R& out) const {
    if (kind != RecordTraits<R>::kKind) return false;
    out = R{};
    std::memcpy(&out, bytes.data(), bytes.size() < sizeof(R) ? bytes.size() : sizeof(R));
    return true;
  }
};

// Walks the records of a kRecords chunk that TraceDecoder has validated.
class RecordCursor {
 public:
  explicit RecordCursor(std::span<const std::byte> payload) : payload_(payload) {}
  bool next(RecordView& record) {
    if (at_ >= payload_.size()) return false;
    RecordHeader header;
    std::memcpy(&header, payload_.data() + at_, sizeof(header));
    record.kind = static_cast<RecordKind>(header.kind);
    record.bytes = payload_.subspan(at_, header.size_bytes);
    at_ += header.size_bytes;
    return true;
  }

 private:
  std::span<const std::byte> payload_;
  size_t at_ = 0;
};

class TraceDecoder {
 public:
  // Fails when the data is not a pipescope trace or is of a newer major format version.
  static Expected<TraceDecoder> open(std::span<const std::byte> data);

  const FileHeader& header() const { return header_; }

  // The next whole, valid chunk; false at the end of the data or at the first bad chunk.
  bool next_chunk(ChunkView& chunk);

  StopReason stop_reason() const { return stop_reason_; }
  const std::string& stop_detail() const { return stop_detail_; }
  uint64_t valid_bytes() const { return offset_; }  // everything before this offset was read
  uint64_t total_bytes() const { return data_.size(); }
  uint64_t chunks_read() const { return chunks_read_; }

 private:
  TraceDecoder(std::span<const std::byte> data, FileHeader header);
  bool stop(StopReason reason, std::string detail);
  bool validate_records(std::span<const std::byte> payload, uint32_t expected_count);
  bool validate_strings(std::span<const std::byte> payload, uint32_t expected_count);

  std::span<const std::byte> data_;
  FileHeader header_;
  uint64_t offset_ = 0;
  uint64_t chunks_read_ = 0;
  uint32_t strings_seen_ = 0;
  bool stopped_ = false;
  StopReason stop_reason_ = StopReason::kEndOfData;
  std::string stop_detail_;
  std::unique_ptr<ZstdDecompressor> decompressor_;
  std::vector<std::byte> scratch_;
};

}  // namespace pipescope::trace
