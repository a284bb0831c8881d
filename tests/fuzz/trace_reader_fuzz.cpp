// libFuzzer target for the trace reader: any bytes must decode without a crash, a hang, an
// out-of-bounds read or a huge allocation, however damaged; and the report's scan of one rank
// (rank_scan.cpp and its parts: NCCL pairing, the flight recorder's records, steps, memory) must take them
// too.
#include <cstddef>
#include <cstdint>
#include <span>

#include "pipescope/analysis/rank_digest.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/record_schema.h"
#include "pipescope/trace/trace_decoder.h"
#include "pipescope/trace/trace_summary.h"

using namespace pipescope::trace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  (void)summarize_trace(bytes);
  (void)pipescope::analysis::scan_rank_bytes(bytes, pipescope::analysis::ScanOptions{});

  auto decoder = TraceDecoder::open(bytes);
  if (!decoder.ok()) return 0;
  uint64_t checksum = 0;
  ChunkView chunk{};
  while (decoder->next_chunk(chunk)) {
    if (chunk.type == ChunkType::kProcessInfo) {
      (void)decode_process_info(chunk.payload);
      continue;
    }
    if (chunk.type != ChunkType::kRecords) continue;
    RecordCursor cursor(chunk.payload);
    RecordView record{};
    while (cursor.next(record)) {
      // Read every field of every known record, as the generic exporters do.
      const RecordSchema* schema = find_record_schema(record.kind);
      if (schema == nullptr) continue;
      for (const FieldDesc& field : schema->fields)
        checksum += read_unsigned_field(record.bytes.data(), field);
    }
  }
  static volatile uint64_t sink;  // keeps the field reads from being optimized away
  sink = checksum;
  (void)sink;
  return 0;
}
