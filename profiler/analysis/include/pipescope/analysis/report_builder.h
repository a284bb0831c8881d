// Turns the scanned ranks of one run (run_loader.h) into the report (run_report.h): aligns the
// clocks, infers (or takes) the layout, then the per-rank, per-stage and per-communicator
// analyses, the hang view and, with a plan, planned versus measured.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipescope/analysis/layout_inference.h"
#include "pipescope/analysis/run_loader.h"
#include "pipescope/analysis/run_report.h"
#include "pipescope/common/expected.h"

namespace pipescope::analysis {

// Which of the plan's two splits --plan compares with (--plan-split): the one it suggests, or its
// baseline (`uniform` in its JSON: the uniform split, or the one given with `plan --split`).
enum class PlanSplit { kSuggested, kBaseline };

struct ReportOptions {
  std::optional<StatedLayout> stated_layout;  // --layout
  std::string plan_json;                      // the text of --plan's file; empty: no plan
  std::string plan_path;
  PlanSplit plan_split = PlanSplit::kSuggested;
  size_t top_kernels = 20;
  unsigned threads = 0;  // 0: one per core. The report is the same on any number.
};

// The run's common clock: rank i's raw timestamp t is at t + shift_ns[i] - origin_ns, where 0
// is the run's first event (what --window counts from). Ranks in LoadedRun order.
struct RunTimebase {
  std::vector<int64_t> shift_ns;
  int64_t origin_ns = 0;
  bool kernel_mode = false;  // collective ends come from NCCL kernels (else from blocking calls)
  ClockReport clock;
};
RunTimebase align_run_clocks(const LoadedRun& run, unsigned threads = 0);

// Fails only on a plan that cannot be read; everything the traces cannot show is a note.
Expected<RunReport> build_run_report(const LoadedRun& run, const ReportOptions& options);

}  // namespace pipescope::analysis
