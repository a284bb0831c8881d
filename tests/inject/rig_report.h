// `pipescope report`'s engine on the traces a rig job left (tests of the report on the profiler's
// own traces).
#pragma once

#include <gtest/gtest.h>

#include "nccl_rig.h"
#include "pipescope/analysis/report_builder.h"
#include "pipescope/analysis/run_loader.h"

namespace pipescope::inject::testing {

// Runs the job and reports on its traces; an empty report (and a test failure) when that fails.
inline analysis::RunReport run_and_report(const RigOptions& options, RigRun& run) {
  run = run_nccl_ranks(options);
  auto loaded = analysis::load_run(run.trace_dir, {});
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  if (!loaded.ok()) return {};
  auto report = analysis::build_run_report(*loaded, {});
  EXPECT_TRUE(report.ok()) << report.error().message;
  return report.ok() ? std::move(*report) : analysis::RunReport{};
}

}  // namespace pipescope::inject::testing
