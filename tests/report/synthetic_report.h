// Known-answer helpers of the report tests on simulated runs (benches/support/synthetic_run.h).
#pragma once

#include <gtest/gtest.h>

#include "pipescope/analysis/report_builder.h"
#include "pipescope/analysis/run_loader.h"
#include "synthetic_run.h"
#include "trace_test_support.h"

namespace pipescope::analysis::testing {

struct Reported {
  synthetic::SyntheticRunTruth truth;
  RunReport report;
};

// Hierarchical ZeRO over 16 ranks in shard groups of 4 (no tensor or pipeline parallelism).
inline synthetic::SyntheticRunSpec hierarchical_zero_spec() {
  synthetic::SyntheticRunSpec spec;
  spec.tp = 1;
  spec.pp = 1;
  spec.dp = 16;
  spec.zero_shard = 4;
  return spec;
}

// Writes the run into `dir`, loads and reports it.
inline Reported report_of(const synthetic::SyntheticRunSpec& spec, const trace::test::ScratchDir& dir,
                          const ReportOptions& options = {}) {
  auto truth = synthetic::write_synthetic_run(spec, dir.path());
  EXPECT_TRUE(truth.ok()) << truth.error().message;
  auto run = load_run(dir.path(), {});
  EXPECT_TRUE(run.ok()) << run.error().message;
  auto report = build_run_report(*run, options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return {std::move(*truth), std::move(*report)};
}

}  // namespace pipescope::analysis::testing
