// The directory `pipescope report` / `export` read: the user's own when it holds *.pst traces;
// otherwise, when it holds PyTorch profiler (Kineto) JSON traces, a private temporary directory
// of those traces converted (removed when the command ends, by a signal too: scratch_dir.h). The
// user's files are never touched.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipescope/analysis/run_loader.h"
#include "pipescope/common/expected.h"

namespace pipescope::cli {

struct TraceDir {
  std::string user_dir;                         // as the user named it
  std::string dir;                              // where the .pst traces are read
  std::string source_format;                    // "pipescope" or "kineto"
  std::vector<std::string> inputs;              // the user's trace files (what no output may replace)
  std::map<std::string, std::string> original;  // converted .pst -> the user's Kineto file
  std::shared_ptr<void> cleanup;                // removes the temporary directory
};

// Refuses a directory that holds both kinds of trace: which one the user meant is not ours to
// guess, and reading only one would silently leave the other out.
Expected<TraceDir> prepare_trace_dir(const std::string& dir);

// The run `report` and `export` work on: DIR prepared, its traces scanned, one run chosen
// (no `run_id` and `attempt` < 0: the only one). The digests' paths name the user's files;
// `trace_files[i]` is the .pst that rank i was read from (a converted Kineto trace's is
// temporary).
struct ChosenRun {
  TraceDir traces;
  analysis::LoadedRun run;
  std::vector<std::string> trace_files;
};
Expected<ChosenRun> load_chosen_run(TraceDir traces, analysis::LoadOptions options,
                                    const std::optional<std::string>& run_id, int64_t attempt);
// The same from DIR, for commands that write no output (`run_id` empty: any run).
Expected<ChosenRun> load_chosen_run(const std::string& dir, analysis::LoadOptions options,
                                    const std::string& run_id, int64_t attempt);

}  // namespace pipescope::cli
