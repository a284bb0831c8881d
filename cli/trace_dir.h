// The directory `pipescope report` / `export` read: the user's own when it holds *.pst traces;
// otherwise, when it holds PyTorch profiler (Kineto) JSON traces, a private temporary directory
// of those traces converted (removed when the command ends). The user's files are never touched.
#pragma once

#include <memory>
#include <string>

#include "pipescope/analysis/run_loader.h"
#include "pipescope/common/expected.h"

namespace pipescope::cli {

struct TraceDir {
  std::string dir;
  std::string source_format;      // "pipescope" or "kineto"
  std::shared_ptr<void> cleanup;  // removes the temporary directory
};

Expected<TraceDir> prepare_trace_dir(const std::string& dir);

// The run `report` and `export` work on: DIR prepared, its traces scanned, one run chosen
// (`run_id` empty and `attempt` < 0: the only one).
struct ChosenRun {
  TraceDir traces;
  analysis::LoadedRun run;
};
Expected<ChosenRun> load_chosen_run(const std::string& dir, analysis::LoadOptions options,
                                    const std::string& run_id, int64_t attempt);

}  // namespace pipescope::cli
