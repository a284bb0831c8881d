#include "pipescope/trace/trace_decoder.h"

#include <algorithm>

#include "pipescope/trace/crc32c.h"
#include "pipescope/trace/record_schema.h"

namespace pipescope::trace {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEndOfData: return "complete";
    case StopReason::kTruncated: return "truncated";
    case StopReason::kCorrupt: return "corrupt";
  }
  return "?";
}

Expected<TraceDecoder> TraceDecoder::open(std::span<const std::byte> data) {
  if (data.empty()) return Error{"empty file: the process created its trace and wrote nothing"};
  FileHeaderFixed fixed{};
  // A file cut inside the magic still starts like a trace: that is a short header, not a
  // foreign file.
  if (std::memcmp(data.data(), kFileMagic, std::min(data.size(), sizeof(kFileMagic))) != 0) {
    return Error{"not a pipescope trace (wrong magic bytes)"};
  }
  if (data.size() < sizeof(fixed)) return Error{"trace header cut short (the file ends inside it)"};
  std::memcpy(&fixed, data.data(), sizeof(fixed));
  // The version comes before the checksum so that a newer file gets the clearer message.
  if (fixed.version_major > kFormatMajor) {
    return Error{"trace format version " + std::to_string(fixed.version_major) + "." +
                 std::to_string(fixed.version_minor) + " is newer than this pipescope reads (" +
                 std::to_string(kFormatMajor) + ".x): upgrade pipescope"};
  }
  if (fixed.version_major < kFormatMajor) {
    return Error{"trace format version " + std::to_string(fixed.version_major) + " is not supported"};
  }
  const size_t padded_min = (sizeof(fixed) + fixed.host_bytes + 7) / 8 * 8;
  if (fixed.host_bytes > kMaxHostBytes || fixed.header_bytes < padded_min ||
      fixed.header_bytes > padded_min + 4096) {
    return Error{"trace header is damaged (inconsistent lengths)"};
  }
  if (data.size() < fixed.header_bytes) return Error{"trace header cut short (the file ends inside it)"};
  uint32_t crc = crc32c(&fixed, kHeaderCrcCoveredBytes);
  crc = crc32c_extend(crc, data.data() + sizeof(fixed), fixed.host_bytes);
  if (crc != fixed.crc32c) return Error{"trace header is damaged (checksum mismatch)"};
  if (fixed.trace_clock > static_cast<uint32_t>(TraceClock::kMonotonicRaw)) {
    return Error{"trace header names an unknown clock " + std::to_string(fixed.trace_clock)};
  }

  FileHeader header;
  header.version_major = fixed.version_major;
  header.version_minor = fixed.version_minor;
  header.header_bytes = fixed.header_bytes;
  header.pid = fixed.pid;
  header.start_realtime_ns = fixed.start_realtime_ns;
  header.start_monotonic_ns = fixed.start_monotonic_ns;
  header.trace_clock = static_cast<TraceClock>(fixed.trace_clock);
  header.host.assign(reinterpret_cast<const char*>(data.data() + sizeof(fixed)), fixed.host_bytes);
  return TraceDecoder(data, std::move(header));
}

TraceDecoder::TraceDecoder(std::span<const std::byte> data, FileHeader header)
    : data_(data), header_(std::move(header)), offset_(header_.header_bytes) {}

bool TraceDecoder::stop(StopReason reason, std::string detail) {
  stopped_ = true;
  stop_reason_ = reason;
  stop_detail_ = std::move(detail);
  return false;
}

bool TraceDecoder::validate_records(std::span<const std::byte> payload, uint32_t expected_count) {
  size_t at = 0;
  uint32_t count = 0;
  while (at < payload.size()) {
    if (payload.size() - at < sizeof(RecordHeader)) return false;
    RecordHeader h;
    std::memcpy(&h, payload.data() + at, sizeof(h));
    if (h.kind == static_cast<uint16_t>(RecordKind::kInvalid) || h.size_bytes < 8 || h.size_bytes % 8 != 0 ||
        h.size_bytes > payload.size() - at) {
      return false;
    }
    const RecordSchema* schema = find_record_schema(static_cast<RecordKind>(h.kind));
    if (schema != nullptr && h.size_bytes < schema->size_bytes) return false;
    at += h.size_bytes;
    ++count;
  }
  return count == expected_count;
}

bool TraceDecoder::validate_strings(std::span<const std::byte> payload, uint32_t expected_count) {
  size_t at = 0;
  uint32_t count = 0;
  while (at < payload.size()) {
    if (payload.size() - at < sizeof(StringEntryHeader)) return false;
    StringEntryHeader e;
    std::memcpy(&e, payload.data() + at, sizeof(e));
    at += sizeof(e);
    // Ids are dense and in order, so a table of them is a vector indexed by id.
    if (e.length_bytes > payload.size() - at || e.id != strings_seen_ + count + 1) return false;
    at += e.length_bytes;
    ++count;
  }
  if (count != expected_count) return false;
  strings_seen_ += count;
  return true;
}

bool TraceDecoder::next_chunk(ChunkView& chunk) {
  if (stopped_) return false;
  const uint64_t remaining = data_.size() - offset_;
  if (remaining == 0) return stop(StopReason::kEndOfData, "");
  const std::string where = "chunk at byte " + std::to_string(offset_);
  if (remaining < sizeof(ChunkHeader)) return stop(StopReason::kTruncated, where + ": header cut short");
  ChunkHeader h;
  std::memcpy(&h, data_.data() + offset_, sizeof(h));
  if (h.magic != kChunkMagic) return stop(StopReason::kCorrupt, where + ": bad chunk magic");
  if (h.stored_bytes > kMaxChunkPayloadBytes || h.raw_bytes > kMaxChunkPayloadBytes) {
    return stop(StopReason::kCorrupt, where + ": length over the 64 MiB chunk limit");
  }
  if (h.stored_bytes > remaining - sizeof(h)) {
    // The checksum cannot be verified without the payload, so a damaged length field and a
    // cut-off write look alike; at the end of a file the cut-off write is by far the likelier.
    return stop(StopReason::kTruncated, where + ": payload cut short");
  }
  const auto stored = data_.subspan(offset_ + sizeof(h), h.stored_bytes);
  if (!chunk_checksum_matches(h, stored)) return stop(StopReason::kCorrupt, where + ": checksum mismatch");

  if ((h.flags & ~kChunkFlagZstd) != 0) return stop(StopReason::kCorrupt, where + ": unknown chunk flags");
  std::span<const std::byte> payload = stored;
  if ((h.flags & kChunkFlagZstd) != 0) {
    if (!decompressor_) decompressor_ = std::make_unique<ZstdDecompressor>();
    if (scratch_.size() < h.raw_bytes) scratch_.resize(h.raw_bytes);
    const auto out = std::span(scratch_).first(h.raw_bytes);
    if (Status s = decompressor_->decompress(stored, out); !s.ok()) {
      return stop(StopReason::kCorrupt, where + ": " + s.error().message);
    }
    payload = out;
  } else if (h.raw_bytes != h.stored_bytes) {
    return stop(StopReason::kCorrupt, where + ": raw and stored lengths differ in an uncompressed chunk");
  }

  const auto type = static_cast<ChunkType>(h.type);
  bool valid = true;
  switch (type) {
    case ChunkType::kRecords: valid = validate_records(payload, h.item_count); break;
    case ChunkType::kStrings: valid = validate_strings(payload, h.item_count); break;
    case ChunkType::kClockAnchor: valid = payload.size() >= sizeof(ClockAnchorPayload); break;
    case ChunkType::kEnd: valid = payload.size() >= sizeof(EndPayload); break;
    case ChunkType::kProcessInfo: break;  // fields are checked when decoded
    default: break;                       // a newer chunk type: handed on, callers skip it
  }
  if (!valid) return stop(StopReason::kCorrupt, where + ": malformed contents");

  chunk.type = type;
  chunk.item_count = h.item_count;
  chunk.file_offset = offset_;
  chunk.payload = payload;
  offset_ += sizeof(h) + h.stored_bytes;
  ++chunks_read_;
  return true;
}

}  // namespace pipescope::trace
