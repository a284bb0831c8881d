// Streams one trace file: process info, strings and records, in file order, with a few chunks
// in memory at a time; what stopped the read is reported at the end.
#pragma once

#include <functional>
#include <string>

#include "pipescope/common/expected.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/trace_decoder.h"
#include "pipescope/trace/trace_summary.h"

namespace pipescope::exporter {

struct WalkResult {
  trace::FileHeader header;
  trace::ProcessInfo process;  // the latest process-info chunk
  trace::StopReason stop = trace::StopReason::kEndOfData;
  std::string stop_detail;
  uint64_t valid_bytes = 0, total_bytes = 0;
};

struct WalkVisitor {
  // Called once the header is read (before any record).
  std::function<void(const trace::FileHeader&)> on_header;
  std::function<void(const trace::ProcessInfo&)> on_process;
  // `strings` holds every string defined so far (a record's strings come before it).
  std::function<void(const trace::RecordView&, const trace::StringTable& strings)> on_record;
  // After the last record, with the whole string table.
  std::function<void(const trace::StringTable& strings)> on_end;
};

Expected<WalkResult> walk_trace(const std::string& path, const WalkVisitor& visitor);

// "rank 3: trace truncated after 1234 of 5678 bytes (...); exported what was there", or empty.
std::string recovery_warning(int32_t rank, const WalkResult& result);

}  // namespace pipescope::exporter
