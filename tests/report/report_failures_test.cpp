// The report's failure views on simulated runs with known answers: ranks that left no trace,
// the hang view and its root, and stragglers (planted, warm-up, a hiccup, a slow neighbour).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "synthetic_report.h"

namespace pipescope::analysis {
namespace {

using synthetic::SyntheticRunSpec;
using synthetic::SyntheticRunTruth;
using testing::report_of;
using trace::test::ScratchDir;

TEST(ReportOnSyntheticRun, NamesThePlantedStragglerAndWhatItCost) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.straggler_rank = 5;
  spec.straggler_delay_ns = 20'000'000;
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_EQ(report.stragglers.size(), 1u);
  EXPECT_EQ(report.stragglers[0].rank, 5);
  // Its data-parallel peer (rank 7: same stage and tp rank) waited 20 ms at each of 3 steps;
  // the blame counts the last 2 (the first step is warm-up), the wait all 3.
  EXPECT_NEAR(static_cast<double>(report.stragglers[0].cost_ns), 2 * 20e6, 1e5);
  EXPECT_EQ(report.stragglers[0].roles, std::vector<std::string>{"data"});
  EXPECT_NEAR(static_cast<double>(report.ranks[7].collective_wait_ns.value_or(-1)), 3 * 20e6, 1e5);
  EXPECT_EQ(report.ranks[5].collective_wait_ns, 0);  // measured, and nothing to wait for
}

TEST(ReportOnSyntheticRun, LatenessInTheFirstStepOnlyIsWarmUpNotAStraggler) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.straggler_rank = 5;
  spec.straggler_delay_by_step = {
      20'000'000};  // late at the first reduction only, as a rank that started late
  const auto [truth, report] = report_of(spec, dir);
  EXPECT_TRUE(report.stragglers.empty()) << report.stragglers[0].rank;
  EXPECT_NEAR(static_cast<double>(report.ranks[7].collective_wait_ns.value_or(-1)), 20e6,
              1e5);  // the wait still counts
}

TEST(ReportOnSyntheticRun, OneHiccupIsNoStraggler) {
  // 20 ms late once, in the third of four steps (a process descheduled), and 0.3 ms in the
  // others: last every time, but without that one instance it caused 0.6 ms, under 1 ms.
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.steps = 4;
  spec.straggler_rank = 5;
  spec.straggler_delay_by_step = {0, 300'000, 20'000'000, 300'000};
  const auto [truth, report] = report_of(spec, dir);
  EXPECT_TRUE(report.stragglers.empty());
  // Late twice: a straggler.
  spec.straggler_delay_by_step = {0, 300'000, 20'000'000, 20'000'000};
  ScratchDir again;
  const auto [truth2, report2] = report_of(spec, again);
  ASSERT_EQ(report2.stragglers.size(), 1u);
  EXPECT_EQ(report2.stragglers[0].rank, 5);
  EXPECT_NEAR(static_cast<double>(report2.stragglers[0].cost_ns), 40.3e6, 1e5);
}

TEST(ReportOnSyntheticRun, AStageLateBecauseItsNeighbourIsSlowIsNoStraggler) {
  // tp 1 x pp 2 x dp 2: rank 3 (stage 1) computes 1.5x slower; rank 1, stage 0 of its pipeline,
  // waits for its gradients and so reaches its own data-parallel reduction late too. The blame
  // passes through rank 1's p2p waits to rank 3.
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.tp = 1;
  spec.pp = 2;
  spec.dp = 2;
  spec.slow_rank = 3;
  spec.slow_factor = 1.5;
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_EQ(report.stragglers.size(), 1u);
  EXPECT_EQ(report.stragglers[0].rank, 3);
  EXPECT_GT(report.ranks[1].p2p_wait_ns, report.ranks[0].p2p_wait_ns);
}

TEST(ReportOnSyntheticRun, ASlowStageIsNamedBeforeTheStagesItsDelayPassedThrough) {
  // tp 1 x pp x dp 2, one rank computing 1.5x slower: the stages after it in its pipeline wait
  // for its activations, those before it for its gradients, and each reaches its own
  // data-parallel reduction late. The blame passes down the chain of p2p waits to the slow rank.
  // At pp 4 it is the only straggler wherever it sits; at pp 8 it comes first (stage 0: its
  // pipeline's other ranks keep small shares, docs/report.md) and, in the last two stages, alone.
  struct Case {
    int pp, slow;
    bool alone;
  };
  for (const Case c :
       {Case{4, 0, true}, Case{4, 2, true}, Case{4, 4, true}, Case{4, 6, true}, Case{8, 0, false},
        Case{8, 2, true}, Case{8, 4, false}, Case{8, 6, false}, Case{8, 12, true}, Case{8, 14, true}}) {
    ScratchDir dir;
    SyntheticRunSpec spec;
    spec.tp = 1;
    spec.pp = c.pp;
    spec.dp = 2;
    spec.steps = 4;
    spec.slow_rank = c.slow;
    spec.slow_factor = 1.5;
    const auto [truth, report] = report_of(spec, dir);
    ASSERT_FALSE(report.stragglers.empty()) << "pp " << c.pp << ", slow rank " << c.slow;
    EXPECT_EQ(report.stragglers[0].rank, c.slow) << "pp " << c.pp;
    if (c.alone) {
      EXPECT_EQ(report.stragglers.size(), 1u) << "pp " << c.pp << ", slow rank " << c.slow;
    }
  }
}

TEST(ReportOnSyntheticRun, HangViewNamesTheRankEveryoneWaitedOn) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.hang_rank = 6;
  spec.hang_step = 2;
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_TRUE(report.hang.suspected);
  ASSERT_EQ(report.hang.communicators.size(), 1u);
  const CommHang& h = report.hang.communicators[0];
  EXPECT_EQ(h.role, "data");
  EXPECT_EQ(h.last_completed_by_all, 2u);  // steps 0 and 1 reduced
  EXPECT_EQ(h.next_op, "all_reduce");
  EXPECT_EQ(h.missing, std::vector<int32_t>{6});
  EXPECT_EQ(h.entered, std::vector<int32_t>{4});  // rank 6's data-parallel peer
  EXPECT_EQ(report.hang.not_closed.size(), 16u);
  EXPECT_EQ(report.hang.root_ranks, std::vector<int32_t>{6});
  EXPECT_EQ(report.hang.blocked, 1u);
}

// Ranks that died before their first flush leave 0-byte files (skipped) or files with their
// header and process info only; their peers' communicator records still place them.
RunReport report_without(const std::vector<int>& dead, bool files_kept, SyntheticRunTruth& truth) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.silent_ranks = dead;
  auto written = synthetic::write_synthetic_run(spec, dir.path());
  EXPECT_TRUE(written.ok()) << written.error().message;
  truth = *written;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    for (int rank : dead)
      if (!files_kept && entry.path().filename().string().starts_with("rank-" + std::to_string(rank) + "."))
        std::filesystem::resize_file(entry.path(), 0);
  }
  auto run = load_run(dir.path(), {});
  EXPECT_TRUE(run.ok()) << run.error().message;
  auto report = build_run_report(*run, {});
  EXPECT_TRUE(report.ok()) << report.error().message;
  return std::move(*report);
}

void expect_true_layout(const RunReport& report, const SyntheticRunTruth& truth, const std::string& what) {
  EXPECT_EQ(report.layout.source, "inferred") << what;
  EXPECT_EQ(report.layout.tp, 2) << what;
  EXPECT_EQ(report.layout.pp, 4) << what;
  EXPECT_EQ(report.layout.dp, 2) << what;
  for (const RankReport& r : report.ranks) {
    EXPECT_EQ(r.stage, truth.stage[static_cast<size_t>(r.rank)]) << what << ", rank " << r.rank;
    EXPECT_EQ(r.tp_rank, truth.tp_rank[static_cast<size_t>(r.rank)]) << what << ", rank " << r.rank;
    EXPECT_EQ(r.dp_rank, truth.dp_rank[static_cast<size_t>(r.rank)]) << what << ", rank " << r.rank;
  }
  for (const std::string& note : report.layout.notes)
    EXPECT_EQ(note.find("no p2p traffic"), std::string::npos) << what << ": " << note;
}

TEST(ReportOnSyntheticRun, LayoutStandsWhenARankLeftNoTrace) {
  for (int rank : {15, 6, 0}) {  // the end of a pipeline chain, a middle stage, rank 0
    for (bool kept : {true, false}) {
      const std::string what = "rank " + std::to_string(rank) + (kept ? " header only" : " 0 bytes");
      SyntheticRunTruth truth;
      const RunReport report = report_without({rank}, kept, truth);
      expect_true_layout(report, truth, what);
      // It shows in every communicator it belonged to (world, tp, pp, dp), marked untraced.
      size_t listed = 0;
      for (const CommunicatorReport& c : report.layout.communicators) {
        if (std::find(c.members.begin(), c.members.end(), rank) == c.members.end()) continue;
        ++listed;
        EXPECT_EQ(c.untraced, std::vector<int32_t>{rank}) << what << ", " << c.role;
      }
      EXPECT_EQ(listed, 4u) << what;
      EXPECT_EQ(report.hang.no_trace, std::vector<int32_t>{rank}) << what;
      EXPECT_FALSE(report.hang.suspected) << what;
      EXPECT_TRUE(report.clock.unaligned_ranks.empty()) << what;
    }
  }
}

TEST(ReportOnSyntheticRun, LayoutStandsWhenAWholeGroupOrStageLeftNoTrace) {
  // Ranks 0 and 1: a whole tensor-parallel group, whose communicator nobody recorded. Ranks
  // 8-11: all of stage 2.
  for (const std::vector<int>& dead : {std::vector<int>{0, 1}, std::vector<int>{8, 9, 10, 11}}) {
    SyntheticRunTruth truth;
    const RunReport report = report_without(dead, true, truth);
    expect_true_layout(report, truth, "ranks " + std::to_string(dead.front()) + "..");
  }
}

TEST(ReportOnSyntheticRun, HangViewNamesTheRankEveryoneWaitedOnWhenItLeftNoTrace) {
  // The 3 a.m. case: rank 6 hung and was killed before it flushed anything.
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.hang_rank = 6;
  spec.hang_step = 2;
  spec.silent_ranks = {6};
  // Not a structured binding: clang 14 cannot capture one in the lambdas below.
  const testing::Reported reported = report_of(spec, dir);
  const RunReport& report = reported.report;
  ASSERT_TRUE(report.hang.suspected);
  ASSERT_EQ(report.hang.communicators.size(), 1u);
  const CommHang& h = report.hang.communicators[0];
  EXPECT_EQ(h.role, "data");
  EXPECT_EQ(h.last_completed_by_all, 2u);
  EXPECT_EQ(h.next_op, "all_reduce");
  EXPECT_EQ(h.entered, std::vector<int32_t>{4});
  EXPECT_EQ(h.missing, std::vector<int32_t>{6});
  EXPECT_EQ(h.untraced, std::vector<int32_t>{6});
  EXPECT_EQ(report.hang.no_trace, std::vector<int32_t>{6});
  EXPECT_EQ(report.hang.root_ranks, std::vector<int32_t>{6});
  // Rank 4's trace ends 0.1 ms after it entered: the synthetic run stops writing there.
  auto has = [&](const std::string& text) {
    return std::find(report.findings.begin(), report.findings.end(), text) != report.findings.end();
  };
  EXPECT_TRUE(
      has("hang: rank 6 holds up the run: it never entered all_reduce #2 of a data communicator "
          "(it left no trace); 1 rank(s) waited on it, directly or through ranks blocked on it, up to "
          "0.1 ms"));
  EXPECT_TRUE(
      has("hang: 1 rank(s) of a data communicator entered all_reduce #2 and waited 0.1 ms for "
          "rank(s) 6 (no trace), which never entered it"));
}

// ---------------------------------------------------------------------------------------------
// Calls that block the host (the flight recorder's records) and how ranks ended (format 1.3).

using Ending = SyntheticRunSpec::RankEnding;

// Rank 5 stops before step 2's gradient reduction; the others block in it (seen in flight).
SyntheticRunSpec blocked_at_rank_5() {
  SyntheticRunSpec spec;
  spec.hang_rank = 5;
  spec.hang_step = 2;
  spec.hang_blocking = true;
  return spec;
}

TEST(ReportOnSyntheticRun, BlockedReductionsSeenInFlightNameTheRootAndWhereItIs) {
  ScratchDir dir;
  SyntheticRunSpec spec = blocked_at_rank_5();
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_TRUE(report.hang.suspected);
  EXPECT_EQ(report.hang.root_ranks, std::vector<int32_t>{5});
  ASSERT_EQ(report.hang.roots.size(), 1u);
  EXPECT_EQ(report.hang.roots[0].where, "host code");  // its last NCCL call had returned
  EXPECT_EQ(report.hang.roots[0].waiting, 1u);         // its data-parallel peer, rank 7
  const auto h = std::find_if(report.hang.communicators.begin(), report.hang.communicators.end(),
                              [](const CommHang& c) { return c.missing == std::vector<int32_t>{5}; });
  ASSERT_NE(h, report.hang.communicators.end());
  EXPECT_EQ(h->entered, std::vector<int32_t>{7});
  EXPECT_EQ(h->next_op, "all_reduce");
  EXPECT_GE(h->waited_ns, 9'000'000'000);  // seen in flight for 10 s
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "hang");
  EXPECT_EQ(report.failure->rank, 5);
  EXPECT_EQ(report.failure->step, 2);
}

TEST(ReportOnSyntheticRun, ARootBlockedInsideACallOfItsOwnIsSaidToBeInIt) {
  ScratchDir dir;
  SyntheticRunSpec spec = blocked_at_rank_5();
  spec.hang_inside_call = true;
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_EQ(report.hang.roots.size(), 1u);
  EXPECT_EQ(report.hang.roots[0].rank, 5);
  EXPECT_EQ(report.hang.roots[0].where, "in call");
  EXPECT_EQ(report.hang.roots[0].call, "all_reduce");
  EXPECT_GE(report.hang.roots[0].since_ns, 0);
  const auto headline = std::find_if(report.findings.begin(), report.findings.end(),
                                     [](const std::string& f) { return f.starts_with("hang: rank 5"); });
  ASSERT_NE(headline, report.findings.end());
  EXPECT_NE(headline->find("it is inside all_reduce for"), std::string::npos) << *headline;
}

TEST(ReportOnSyntheticRun, RanksCutShortWithNoSignalOrExitWereKilled) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.silent_ranks = {3};  // killed before its first flush: no end chunk, nothing recorded
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "killed");
  EXPECT_EQ(report.failure->rank, 3);
  EXPECT_NE(report.failure->detail.find("SIGKILL"), std::string::npos) << report.failure->detail;
}

TEST(ReportOnSyntheticRun, AFatalSignalBeforeTheLaunchersSigtermIsTheFailure) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.endings.push_back(Ending{3, 0, 0, 11 /* SIGSEGV */, -1});
  for (int r = 0; r < 16; ++r)
    if (r != 3) spec.endings.push_back(Ending{r, 1'000'000'000, 0, 15 /* SIGTERM */, -1});
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "fatal signal");
  EXPECT_EQ(report.failure->rank, 3);
  EXPECT_EQ(report.failure->code, 11);
  EXPECT_EQ(report.failure->step, 3);  // after the 3 steps (0, 1, 2) it completed
  EXPECT_NE(report.failure->detail.find("SIGSEGV"), std::string::npos);
  EXPECT_EQ(
      std::count_if(report.findings.begin(), report.findings.end(),
                    [](const std::string& f) { return f.starts_with("failure (fatal signal): rank 3"); }),
      1);
}

TEST(ReportOnSyntheticRun, TheEarliestEventWinsAndAnNcclErrorKeepsItsCode) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.endings.push_back(Ending{2, 0, 6 /* ncclRemoteError */, 0, 1});
  spec.endings.push_back(Ending{9, 500'000'000, 0, 0, 1});  // exits with 1 later
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "nccl error");
  EXPECT_EQ(report.failure->rank, 2);
  EXPECT_EQ(report.failure->code, 6);
  EXPECT_NE(report.failure->detail.find("ncclRemoteError"), std::string::npos);
  // Without the error, rank 2's exit status is the first failure.
  spec.endings[0].nccl_error = 0;
  ScratchDir again;
  const auto [truth2, report2] = report_of(spec, again);
  ASSERT_TRUE(report2.failure.has_value());
  EXPECT_EQ(report2.failure->kind, "exit status");
  EXPECT_EQ(report2.failure->rank, 2);
  EXPECT_EQ(report2.failure->code, 1);
}

TEST(ReportOnSyntheticRun, AWatchdogsAbortOfAWaitingRankIsAConsequenceOfTheHang) {
  ScratchDir dir;
  SyntheticRunSpec spec = blocked_at_rank_5();
  spec.endings.push_back(Ending{7, 10'000'000'000, 0, 6 /* SIGABRT */, -1});
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "hang");
  EXPECT_EQ(report.failure->rank, 5);
  EXPECT_NE(report.failure->detail.find("rank 7 was then ended by SIGABRT"), std::string::npos)
      << report.failure->detail;
}

TEST(ReportOnSyntheticRun, RanksEndedByTheLauncherAloneAreTerminatedAndACleanRunHasNoFailure) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.endings.push_back(Ending{4, 0, 0, 15, -1});
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->kind, "terminated");
  EXPECT_EQ(report.failure->rank, 4);
  ScratchDir clean;
  spec.endings = {Ending{4, 0, 0, 0, 0}};  // exit 0
  const auto [truth2, report2] = report_of(spec, clean);
  EXPECT_FALSE(report2.failure.has_value());
}

}  // namespace
}  // namespace pipescope::analysis
