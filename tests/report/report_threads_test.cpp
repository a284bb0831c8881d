// The report does not depend on how many threads make it: the scan's and the report's workers
// each fill slots of their own (a rank, a communicator), merged afterwards in rank and
// communicator order, so the JSON of a run is byte for byte the same on one thread and on two.
#include <gtest/gtest.h>

#include <string>

#include "pipescope/report/report_output.h"
#include "synthetic_report.h"

namespace pipescope::analysis {
namespace {

using synthetic::SyntheticRunSpec;
using trace::test::ScratchDir;

struct Made {
  RunReport report;
  std::string json;
};

Made report_on(const std::string& dir, unsigned threads) {
  LoadOptions load;
  load.threads = threads;
  auto run = load_run(dir, load);
  EXPECT_TRUE(run.ok()) << run.error().message;
  ReportOptions options;
  options.threads = threads;
  auto report = build_run_report(*run, options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  std::string json = report::report_json(*report);
  return {std::move(*report), std::move(json)};
}

// 32 ranks with a straggler: clock alignment over collectives and p2p transfers, NCCL table,
// stragglers and waits, per-stage figures and memory timelines, all spread over the workers.
TEST(ReportThreads, JsonOfARunWithAStragglerIsTheSameOnOneAndTwoThreads) {
  ScratchDir dir;
  SyntheticRunSpec spec = synthetic::with_layout(2, 4, 4);
  spec.steps = 5;
  spec.straggler_rank = 5;
  spec.straggler_delay_ns = 3'000'000;
  ASSERT_TRUE(synthetic::write_synthetic_run(spec, dir.path()).ok());
  const Made one = report_on(dir.path(), 1);
  ASSERT_FALSE(one.report.stragglers.empty());
  EXPECT_EQ(one.report.stragglers[0].rank, 5);
  EXPECT_EQ(report_on(dir.path(), 2).json, one.json);
}

// Without NVTX ranges the pipeline figures come from the p2p pattern, read per rank.
TEST(ReportThreads, JsonOfARunWithoutNvtxIsTheSameOnOneAndTwoThreads) {
  ScratchDir dir;
  SyntheticRunSpec spec = synthetic::with_layout(2, 4, 4);
  spec.nvtx = false;
  ASSERT_TRUE(synthetic::write_synthetic_run(spec, dir.path()).ok());
  const Made one = report_on(dir.path(), 1);
  ASSERT_EQ(one.report.ranks.size(), 32u);
  for (const RankReport& r : one.report.ranks) EXPECT_EQ(r.pipeline_source, "p2p") << r.rank;
  EXPECT_EQ(report_on(dir.path(), 2).json, one.json);
}

}  // namespace
}  // namespace pipescope::analysis
