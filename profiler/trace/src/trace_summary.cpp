#include "pipescope/trace/trace_summary.h"

#include <algorithm>

#include <cstring>

#include "pipescope/trace/trace_file.h"

namespace pipescope::trace {

void read_strings_chunk(std::span<const std::byte> payload, StringTable& table) {
  size_t at = 0;
  while (at + sizeof(StringEntryHeader) <= payload.size()) {
    StringEntryHeader e;
    std::memcpy(&e, payload.data() + at, sizeof(e));
    at += sizeof(e);
    table.add(std::string(reinterpret_cast<const char*>(payload.data() + at), e.length_bytes));
    at += e.length_bytes;
  }
}

uint64_t anchor_stray_ns(std::span<const ClockAnchorPayload> anchors) {
  uint64_t worst = 0;
  for (const ClockAnchorPayload& anchor : anchors) {
    const uint64_t apart = anchor.trace_clock_ns > anchor.monotonic_ns
                               ? anchor.trace_clock_ns - anchor.monotonic_ns
                               : anchor.monotonic_ns - anchor.trace_clock_ns;
    if (apart > anchor.uncertainty_ns) worst = std::max(worst, apart - anchor.uncertainty_ns);
  }
  return worst;
}

Expected<TraceSummary> summarize_trace(std::span<const std::byte> data) {
  auto decoder = TraceDecoder::open(data);
  if (!decoder.ok()) return decoder.error();
  TraceSummary summary;
  summary.header = decoder->header();
  ChunkView chunk{};
  while (decoder->next_chunk(chunk)) {
    switch (chunk.type) {
      case ChunkType::kRecords: {
        RecordCursor cursor(chunk.payload);
        RecordView record{};
        while (cursor.next(record)) {
          const auto kind = static_cast<uint16_t>(record.kind);
          if (kind <= kLastRecordKind) {
            ++summary.records_by_kind[kind];
          } else {
            ++summary.records_of_unknown_kind;
          }
          NoticeRecord notice;
          if (record.decode(notice) && notice.code == static_cast<uint16_t>(NoticeCode::kRecordsDropped)) {
            summary.dropped_notices += notice.count;
          }
          ++summary.records;
        }
        break;
      }
      case ChunkType::kStrings: read_strings_chunk(chunk.payload, summary.strings); break;
      case ChunkType::kProcessInfo: {
        ++summary.process_info_chunks;
        auto info = decode_process_info(chunk.payload);
        if (info.ok()) {
          summary.process = std::move(*info);
        } else {
          summary.process_info_error = info.error().message;
        }
        break;
      }
      case ChunkType::kClockAnchor: {
        ClockAnchorPayload anchor;
        std::memcpy(&anchor, chunk.payload.data(), sizeof(anchor));
        summary.anchors.push_back(anchor);
        break;
      }
      case ChunkType::kEnd: {
        EndPayload end;
        std::memcpy(&end, chunk.payload.data(), sizeof(end));
        summary.end = end;
        break;
      }
      default: break;
    }
  }
  summary.chunks = decoder->chunks_read();
  summary.valid_bytes = decoder->valid_bytes();
  summary.total_bytes = decoder->total_bytes();
  summary.stop_reason = decoder->stop_reason();
  summary.stop_detail = decoder->stop_detail();
  return summary;
}

Expected<TraceSummary> summarize_trace_file(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.error();
  auto summary = summarize_trace(file->bytes());
  if (!summary.ok()) return Error{path + ": " + summary.error().message};
  return summary;
}

}  // namespace pipescope::trace
