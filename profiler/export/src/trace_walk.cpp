#include "trace_walk.h"

#include <cstring>

#include "pipescope/trace/trace_file.h"

namespace pipescope::exporter {

Expected<WalkResult> walk_trace(const std::string& path, const WalkVisitor& visitor) {
  auto file = trace::MappedFile::open(path);
  if (!file) return file.error();
  auto decoder = trace::TraceDecoder::open(file->bytes());
  if (!decoder) return Error(path + " is not a pipescope trace: " + decoder.error().message);
  WalkResult result;
  result.header = decoder->header();
  if (visitor.on_header) visitor.on_header(result.header);
  trace::StringTable strings;
  trace::ChunkView chunk;
  for (; decoder->next_chunk(chunk); file->release_before(decoder->valid_bytes())) {
    switch (chunk.type) {
      case trace::ChunkType::kStrings: trace::read_strings_chunk(chunk.payload, strings); break;
      case trace::ChunkType::kProcessInfo:
        if (auto info = trace::decode_process_info(chunk.payload)) {
          result.process = std::move(*info);
          if (visitor.on_process) visitor.on_process(result.process);
        }
        break;
      case trace::ChunkType::kRecords: {
        if (!visitor.on_record) break;
        trace::RecordCursor cursor(chunk.payload);
        trace::RecordView record;
        while (cursor.next(record)) visitor.on_record(record, strings);
        break;
      }
      default: break;
    }
  }
  if (visitor.on_end) visitor.on_end(strings);
  result.stop = decoder->stop_reason();
  result.stop_detail = decoder->stop_detail();
  result.valid_bytes = decoder->valid_bytes();
  result.total_bytes = decoder->total_bytes();
  return result;
}

std::string recovery_warning(int32_t rank, const WalkResult& result) {
  if (result.stop == trace::StopReason::kEndOfData) return {};
  return "rank " + std::to_string(rank) + ": trace " + trace::stop_reason_name(result.stop) + " after " +
         std::to_string(result.valid_bytes) + " of " + std::to_string(result.total_bytes) + " bytes (" +
         result.stop_detail + "); exported what was there";
}

}  // namespace pipescope::exporter
