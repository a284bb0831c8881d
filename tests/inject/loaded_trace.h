// Test support: a whole trace file read into memory — every record by kind, the string table,
// the latest process info — so that tests state what a trace must hold in a few lines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_decoder.h"
#include "pipescope/trace/trace_summary.h"

namespace pipescope::inject::testing {

struct LoadedTrace {
  std::string path;
  trace::FileHeader header;
  trace::ProcessInfo process;
  trace::StringTable strings;
  std::vector<std::vector<std::byte>> records;  // each whole record, in file order
  std::vector<trace::ClockAnchorPayload> anchors;
  bool ended_cleanly = false;  // an end chunk was read
  trace::StopReason stop_reason = trace::StopReason::kEndOfData;

  // Every record of R's kind, decoded, in file order.
  template <class R>
  std::vector<R> all() const {
    std::vector<R> out;
    for (const auto& bytes : records) {
      trace::RecordView view{static_cast<trace::RecordKind>(header_kind(bytes)), bytes};
      R record;
      if (view.decode(record)) out.push_back(record);
    }
    return out;
  }
  std::string_view text(uint32_t id) const { return strings.get(id); }
  // Notices with `code`.
  std::vector<trace::NoticeRecord> notices(trace::NoticeCode code) const;

 private:
  static uint16_t header_kind(const std::vector<std::byte>& bytes);
};

// Reads `path`; an error only when it is not a trace at all (a damaged tail stops reading and
// shows in stop_reason).
Expected<LoadedTrace> read_trace(const std::string& path);

// read_trace for tests: fails the calling test (ADD_FAILURE) when the file is unreadable.
LoadedTrace load_trace(const std::string& path);

// Every *.pst file in `dir`, sorted by name.
std::vector<std::string> trace_files_in(const std::string& dir);

// The one trace a test's session wrote into `dir`; fails the calling test unless there is
// exactly one.
LoadedTrace trace_in(const std::string& dir);

// A fresh empty directory under the test temp dir (gtest). Removed, with what the test wrote in
// it, once every test of the program has passed; kept for a look when one failed.
std::string make_temp_dir(const std::string& tag);

}  // namespace pipescope::inject::testing
