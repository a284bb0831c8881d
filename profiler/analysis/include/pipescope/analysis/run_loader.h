// Finds the traces of one run in a directory and scans them, one rank per thread: every
// `*.pst` file is read once (rank_digest.h), files are grouped by run id and restart attempt,
// and exactly one group is chosen (the only one, or the one --run / --attempt names). What a
// crash leaves is used, not refused: a file whose header is cut or damaged is skipped with a
// warning, and a file cut before its process info (it names no run) joins the only run there is.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/analysis/rank_digest.h"
#include "pipescope/common/expected.h"

namespace pipescope::analysis {

struct LoadOptions {
  ScanOptions scan;
  std::optional<std::string> run_id;  // --run ("" chooses a run whose traces state no id)
  std::optional<int32_t> attempt;     // --attempt
  unsigned threads = 0;               // 0: one per core
  // Several attempts of one run and no `attempt`: choose the latest (and list the others in
  // LoadedRun::other_attempts) instead of failing.
  bool latest_attempt = false;
};

// A kernel name's statistics over every rank of the run.
struct MergedKernel {
  std::string name;
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = INT64_MAX;
  int64_t max_ns = 0;
  SparseDurations durations;
};

struct LoadedRun {
  std::string dir;
  std::string run_id;
  int32_t attempt = 0;
  int32_t world_size = 0;            // the largest world size a trace states, or the rank count
  std::vector<RankDigest> ranks;     // sorted by global rank
  std::vector<int32_t> global_rank;  // of ranks[i]
  std::vector<int32_t> missing_ranks;
  std::vector<MergedKernel> kernels;  // every kernel name of the run
  uint64_t record_bytes = 0;
  uint64_t records = 0;
  std::vector<std::string> warnings;    // skipped empty files, numbered ranks, ...
  std::vector<int32_t> other_attempts;  // of the same run, when the latest was chosen
};

// Fails (a message naming the files involved) when DIR holds no readable trace, when a `*.pst`
// is not a pipescope trace at all (neither its magic bytes nor zeros), when traces of several
// runs or attempts are mixed and no option picks one, or when two traces of the chosen run claim
// the same rank. A rank comes from the process info, else from NCCL, else from the file name.
Expected<LoadedRun> load_run(const std::string& dir, const LoadOptions& options);

}  // namespace pipescope::analysis
