// Failure diagnosis on traces the profiler itself wrote, with NCCL calls that block the way real
// NCCL's do: an 8-rank job (tp=2, pp=2, dp=2) under LD_PRELOAD=libpipescope.so on the fake NCCL,
// whose communicator creation waits for every member and whose collectives and receives wait
// for their peers with no timeout (FAKE_NCCL_WAIT=1, FAKE_NCCL_TIMEOUT_MS=0). The job is ended
// from outside, as a scheduler ends a hung job: only the flight recorder (nccl_call records)
// shows that the waiting ranks were inside a call.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>

#include "rig_report.h"

#ifndef PIPESCOPE_INJECT_SO
#error "PIPESCOPE_INJECT_SO must name libpipescope.so"
#endif

namespace pipescope::inject::testing {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// Every rank flushes every 200 ms; by the time the job is ended (1.5 s in) the waiting ranks'
// traces hold their calls in flight whatever ends them.
RigOptions blocking_job(std::vector<std::string> program_args, int timeout_ms = 0) {
  RigOptions options = rig_options(RigVariant::kLinked, 4, true);
  options.preload = PIPESCOPE_INJECT_SO;
  options.env = {{"FAKE_NCCL_WAIT", "1"},
                 {"FAKE_NCCL_TIMEOUT_MS", std::to_string(timeout_ms)},
                 {"PIPESCOPE_FLUSH_MS", "200"}};
  options.program_args = std::move(program_args);
  return options;
}

analysis::RunReport report_of(const RigOptions& options, RigRun& run) { return run_and_report(options, run); }

std::string headline(const analysis::RunReport& report) {
  const auto it = std::find_if(report.findings.begin(), report.findings.end(),
                               [](const std::string& f) { return f.starts_with("hang:"); });
  return it == report.findings.end() ? "" : *it;
}

bool lists(const std::vector<int32_t>& ranks, int32_t rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

void expect_root(const analysis::RunReport& report, int32_t rank, const std::string& where) {
  ASSERT_TRUE(report.hang.suspected);
  EXPECT_EQ(report.hang.root_ranks, std::vector<int32_t>{rank});
  ASSERT_EQ(report.hang.roots.size(), 1u);
  EXPECT_EQ(report.hang.roots[0].rank, rank);
  EXPECT_EQ(report.hang.roots[0].where, where);
  EXPECT_EQ(report.hang.roots[0].waiting, 7u);
  EXPECT_EQ(report.hang.blocked, 7u);
  // The findings lead with the hang (after the layout line, which comes first when inferred).
  ASSERT_FALSE(report.findings.empty());
  const size_t first = report.findings[0].starts_with("layout") ? 1 : 0;
  ASSERT_GT(report.findings.size(), first);
  EXPECT_TRUE(report.findings[first].starts_with("hang: rank " + std::to_string(rank) + " holds up the run"))
      << report.findings[first];
}

// Rank 5 stops in its own code before step 2's data-parallel all-reduce; its peers block in
// the calls that need it, and the job is ended by SIGTERM.
TEST(NcclFailure, RankStoppedInHostCodeEndedBySigterm) {
  RigOptions options = blocking_job({"--hang", "5:2"});
  options.signals = {{1500, -1, SIGTERM}};
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  expect_root(report, 5, "host code");
  EXPECT_EQ(report.hang.roots[0].call, "recv");  // its last: the backward's receive from stage 0
  EXPECT_NE(headline(report).find("it is in its own code for"), std::string::npos) << headline(report);
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "hang");
  EXPECT_EQ(report.failure->rank, 5);
  EXPECT_EQ(report.failure->step, 2);
}

TEST(NcclFailure, RankStoppedInHostCodeEndedBySigkill) {
  RigOptions options = blocking_job({"--hang", "5:2"});
  options.signals = {{1500, -1, SIGKILL}};
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  for (const RankResult& r : run.result.ranks) EXPECT_TRUE(r.killed_by(SIGKILL)) << r.rank;
  expect_root(report, 5, "host code");
  EXPECT_EQ(report.hang.not_closed.size(), 8u);
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "hang");
}

// Rank 3 is killed before its first flush: it leaves no record. The others wait on it.
TEST(NcclFailure, RankKilledBeforeItsFirstFlushIsTheNoTraceRoot) {
  RigOptions options = blocking_job({"--hang", "3:2"});
  options.rank_env = [](int rank) { return rank == 3 ? Env{{"PIPESCOPE_FLUSH_MS", "600000"}} : Env{}; };
  options.signals = {{1000, 3, SIGKILL}, {2000, -1, SIGTERM}};
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  EXPECT_TRUE(run.result.ranks[3].killed_by(SIGKILL));
  EXPECT_TRUE(lists(report.hang.no_trace, 3));
  expect_root(report, 3, "no trace");
  EXPECT_NE(headline(report).find("it left no trace"), std::string::npos) << headline(report);
}

// Rank 6 never creates its communicators: the others block in the world communicator's
// creation. Rank 6 called no NCCL and left no trace; the others' traces opened as they entered.
TEST(NcclFailure, RankThatNeverJoinsIsTheRootOfTheCreation) {
  RigOptions options = blocking_job({"--no-comms", "6"});
  options.signals = {{1500, -1, SIGTERM}};
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  ASSERT_EQ(report.files.size(), 7u);
  EXPECT_EQ(report.hang.no_trace, std::vector<int32_t>{6});
  expect_root(report, 6, "no trace");
  const auto creation = std::find_if(report.hang.communicators.begin(), report.hang.communicators.end(),
                                     [](const analysis::CommHang& h) { return h.creation; });
  ASSERT_NE(creation, report.hang.communicators.end());
  EXPECT_EQ(creation->next_op, "ncclCommInitRank");
  EXPECT_EQ(creation->role, "world");
  EXPECT_EQ(creation->entered.size(), 7u);
  EXPECT_EQ(creation->missing, std::vector<int32_t>{6});
  EXPECT_NE(headline(report).find("never entered ncclCommInitRank of a world communicator"),
            std::string::npos)
      << headline(report);
}

// The classes of failure a finished job's traces tell: an exit with a status, a fatal signal.
TEST(NcclFailure, ExitWithAStatusIsTheFailureOfTheRankTheOthersWaitedOn) {
  RigOptions options = blocking_job({"--exit", "2:1"}, 1500);
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  EXPECT_TRUE(run.result.ranks[2].exited_with(3));
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "exit status");
  EXPECT_EQ(report.failure->rank, 2);
  EXPECT_EQ(report.failure->code, 3);
  EXPECT_EQ(report.failure->step, 1);
  EXPECT_EQ(report.hang.root_ranks, std::vector<int32_t>{2});
  ASSERT_EQ(report.hang.roots.size(), 1u);
  EXPECT_EQ(report.hang.roots[0].where, "exited");
  EXPECT_EQ(report.hang.roots[0].code, 3);
}

TEST(NcclFailure, FatalSignalIsRecordedWithItsRankAndStep) {
  RigOptions options = blocking_job({"--abort", "4:2"}, 1500);
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  EXPECT_TRUE(run.result.ranks[4].killed_by(SIGABRT));
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "fatal signal");
  EXPECT_EQ(report.failure->rank, 4);
  EXPECT_EQ(report.failure->code, SIGABRT);
  EXPECT_EQ(report.failure->step, 2);
  EXPECT_NE(report.failure->detail.find("SIGABRT"), std::string::npos);
  ASSERT_EQ(report.hang.roots.size(), 1u);
  EXPECT_EQ(report.hang.roots[0].where, "signal");
  EXPECT_EQ(report.hang.roots[0].code, SIGABRT);
}

TEST(NcclFailure, CleanJobHasNoFailure) {
  RigOptions options = blocking_job({}, 30000);
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  for (const RankResult& r : run.result.ranks) EXPECT_TRUE(r.exited_with(0)) << r.status_text();
  EXPECT_FALSE(report.failure.has_value()) << report.failure->detail;
  EXPECT_FALSE(report.hang.suspected);
  EXPECT_TRUE(report.hang.desyncs.empty());
  EXPECT_TRUE(report.hang.p2p_mismatches.empty());
}

// Rank 5's data-parallel all-reduce of step 1 has half the elements of its peer's (rank 7).
TEST(NcclFailure, DesyncNamesTheCommunicatorSequenceAndMembers) {
  RigOptions options = blocking_job({"--desync", "5:1"}, 30000);
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  ASSERT_EQ(report.hang.desyncs.size(), 1u);
  const analysis::Desync& d = report.hang.desyncs[0];
  EXPECT_EQ(d.role, "data");
  EXPECT_EQ(d.sequence, 3u);  // all-reduce, all-gather, reduce-scatter a step: step 1's first
  EXPECT_EQ(d.ranks, (std::vector<int32_t>{5, 7}));
  EXPECT_TRUE(std::any_of(report.findings.begin(), report.findings.end(), [](const std::string& f) {
    return f.starts_with("desync: at data communicator");
  }));
}

// Rank 1 (stage 0) sends 64 floats where stage 1's rank 5 receives 128, at step 1.
TEST(NcclFailure, P2pSizeMismatchNamesSenderAndReceiver) {
  RigOptions options = blocking_job({"--p2p-size", "1:1"}, 30000);
  RigRun run;
  const analysis::RunReport report = report_of(options, run);
  ASSERT_EQ(report.hang.p2p_mismatches.size(), 1u);
  EXPECT_EQ(report.hang.p2p_mismatches[0].sender, 1);
  EXPECT_EQ(report.hang.p2p_mismatches[0].receiver, 5);
  // To the next stage, a grouped send and then this one each step: step 1's is the fourth.
  EXPECT_EQ(report.hang.p2p_mismatches[0].sequence, 3u);
  EXPECT_TRUE(report.hang.desyncs.empty());
}

}  // namespace
}  // namespace pipescope::inject::testing
