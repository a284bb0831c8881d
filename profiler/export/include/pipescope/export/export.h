// The engines of `pipescope export`: they stream each rank's trace (a few chunks in memory at a
// time, never the whole file) into Chrome trace-event JSON or a SQLite database. Which ranks,
// and the clock offsets that put them on the run's common clock, come from the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::exporter {

struct ExportRank {
  std::string path;         // the rank's .pst file
  std::string source_path;  // the user's file it came from (a Kineto JSON trace's name); empty: `path`
  int32_t rank = 0;         // global rank: the process in the output
  int64_t clock_offset_ns;  // added to the file's timestamps: the run's common clock, 0 = first event
};

// Above this many bytes the Perfetto export warns: viewers slow down (use --ranks / --window).
inline constexpr uint64_t kLargeExportBytes = uint64_t{300} << 20;

// What the report's layout inference found, for the SQLite export's `ranks` and
// `communicators` tables (the export itself infers nothing).
struct ExportRankPlace {
  int32_t rank = 0;
  int32_t stage = 0, tp_rank = 0, dp_rank = 0;
};
struct ExportCommunicator {
  uint64_t comm_id = 0;
  int32_t size = 0;              // 0: unknown (no communicator record was traced)
  std::string role;              // "tensor", "pipeline", "data", ...; empty when not known
  std::vector<int32_t> members;  // global rank by NCCL rank; -1 where that member was not traced
};

struct ExportOptions {
  std::vector<ExportRank> ranks;
  // [t0, t1) on the common clock: records overlapping it are kept whole, the others dropped.
  std::optional<std::pair<int64_t, int64_t>> window_ns;
  std::string output_path;  // written whole or not at all (output_file.h)
  // Perfetto: above this size the summary warns (a seam for tests; kLargeExportBytes otherwise).
  uint64_t large_output_bytes = kLargeExportBytes;
  // SQLite: every rank's place when the layout is known (empty: the columns are NULL), and the
  // run's communicators.
  std::vector<ExportRankPlace> places;
  std::vector<ExportCommunicator> communicators;
};

struct ExportSummary {
  uint64_t records_written = 0;
  uint64_t bytes_written = 0;
  std::vector<std::string> warnings;  // truncated inputs, a very large output
};

// Fail when the output cannot be written or an input is not a trace; the output is then left
// as it was. The SQLite export refuses to replace an existing file unless it is an earlier
// pipescope export.
Expected<ExportSummary> export_perfetto(const ExportOptions& options);
Expected<ExportSummary> export_sqlite(const ExportOptions& options);
// The SQLite export's rule, on its own so that a command can check it before any work.
Status check_sqlite_output(const std::string& path);

}  // namespace pipescope::exporter
