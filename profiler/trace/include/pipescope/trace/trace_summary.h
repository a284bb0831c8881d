// One pass over a trace that collects what `pipescope inspect` shows and what every analysis
// needs first: the header, the latest process info, the clock anchors, the string table,
// record counts by kind, and how much of the file was recovered.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/trace/format.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_decoder.h"

namespace pipescope::trace {

// Strings by id, as the file's string chunks define them (ids are dense from 1).
class StringTable {
 public:
  void add(std::string text) { strings_.push_back(std::move(text)); }
  // The string, or an empty view for id 0 or an id the (possibly truncated) file never defined.
  std::string_view get(uint32_t id) const {
    return id >= 1 && id <= strings_.size() ? std::string_view(strings_[id - 1]) : std::string_view();
  }
  size_t size() const { return strings_.size(); }

 private:
  std::vector<std::string> strings_;
};

// Appends the entries of a validated kStrings chunk to `table`.
void read_strings_chunk(std::span<const std::byte> payload, StringTable& table);

struct TraceSummary {
  FileHeader header;
  std::optional<ProcessInfo> process;  // the latest process-info chunk
  uint32_t process_info_chunks = 0;
  std::vector<ClockAnchorPayload> anchors;
  std::optional<EndPayload> end;  // present when the writer closed the file cleanly
  StringTable strings;
  std::array<uint64_t, kLastRecordKind + 1> records_by_kind{};
  uint64_t records_of_unknown_kind = 0;
  uint64_t records = 0;
  uint64_t dropped_notices = 0;  // records reported lost by kRecordsDropped notices
  uint64_t chunks = 0;
  uint64_t valid_bytes = 0;
  uint64_t total_bytes = 0;
  StopReason stop_reason = StopReason::kEndOfData;
  std::string stop_detail;
  std::string process_info_error;  // set when a process-info chunk could not be decoded
};

// How far the trace clock strayed from CLOCK_MONOTONIC at `anchors`, beyond each anchor's own
// uncertainty (0: within it everywhere). Meaningful where the trace clock is CLOCK_MONOTONIC,
// which the profiler may read from the TSC (docs/trace-format.md, section 11).
uint64_t anchor_stray_ns(std::span<const ClockAnchorPayload> anchors);

// Fails only when the data is not a readable trace at all (see TraceDecoder::open);
// a truncated or damaged tail is reported in the summary.
Expected<TraceSummary> summarize_trace(std::span<const std::byte> data);
Expected<TraceSummary> summarize_trace_file(const std::string& path);

}  // namespace pipescope::trace
