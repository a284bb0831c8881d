// The rig's programs on their own, without libpipescope.so: what every later test compares
// against. Eight ranks of tp=2, pp=2, dp=2 in Megatron's order (tp fastest, then dp, then pp).
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "loaded_trace.h"
#include "nccl_rig.h"
#include "rank_launcher.h"

#ifndef FAKE_NCCL_LIBRARY
#error "FAKE_NCCL_LIBRARY must name the fake libnccl.so.2"
#endif
#ifndef CRASH_PROGRAM
#error "CRASH_PROGRAM must name tests/inject/programs' crash_program"
#endif

namespace pipescope::inject::testing {
namespace {

class NcclRanksProgram : public ::testing::TestWithParam<RigVariant> {};

TEST_P(NcclRanksProgram, EightRanksFormTheirGroupsAndExitZero) {
  const RigRun run = run_nccl_ranks(rig_options(GetParam()));
  ASSERT_TRUE(run.result.all_exited_with(0)) << run.result.describe();
  const std::vector<std::string> expected = expected_nccl_ranks_stdout();
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(run.result.ranks[static_cast<size_t>(rank)].out, expected[static_cast<size_t>(rank)]);
    EXPECT_EQ(run.result.ranks[static_cast<size_t>(rank)].err, "");
  }
}

// With nothing in between, the fake receives exactly the program's calls: the baseline that
// makes the same comparison under LD_PRELOAD a proof of forwarding.
TEST_P(NcclRanksProgram, FakeLibraryReceivesExactlyTheCallsTheProgramMade) {
  const RigRun run = run_nccl_ranks(rig_options(GetParam(), 2));
  ASSERT_TRUE(run.result.all_exited_with(0)) << run.result.describe();
  for (int rank = 0; rank < 8; ++rank) {
    const std::vector<std::string> made = program_calls(run, rank);
    // version, id (rank 0), init, 4 splits, 5 x (rank, size), device, 2 steps, finalize, destroys
    EXPECT_GT(made.size(), 30u) << "rank " << rank;
    EXPECT_EQ(fake_calls(run, rank), made) << "rank " << rank;
  }
}

TEST_P(NcclRanksProgram, NvtxRangesAndStepsDoNotChangeWhatItPrints) {
  const RigRun run = run_nccl_ranks(rig_options(GetParam(), 3, true));
  ASSERT_TRUE(run.result.all_exited_with(0)) << run.result.describe();
  EXPECT_EQ(run.result.ranks[5].out, expected_nccl_ranks_stdout()[5]);
}

INSTANTIATE_TEST_SUITE_P(Variants, NcclRanksProgram,
                         ::testing::Values(RigVariant::kLinked, RigVariant::kDlopen),
                         [](const auto& test) { return std::string(variant_name(test.param)); });

TEST(NcclRanksProgramUsage, RefusesAWorldThatTpTimesPpDoesNotDivide) {
  LaunchOptions options;
  options.argv = {NCCL_RANKS_PROGRAM, "--id-dir", make_temp_dir("rig-usage")};
  options.world_size = 1;  // tp=2 pp=2 by default
  const LaunchResult result = launch_ranks(options);
  EXPECT_TRUE(result.ranks[0].exited_with(2)) << result.describe();
  EXPECT_NE(result.ranks[0].err.find("not a multiple of tp*pp"), std::string::npos);
}

TEST(NcclRanksProgramUsage, OneRankWithTpAndPpOfOneNeedsNoRendezvous) {
  LaunchOptions options;
  options.argv = {NCCL_RANKS_PROGRAM, "--id-dir", make_temp_dir("rig-one"), "--tp", "1", "--pp", "1"};
  const LaunchResult result = launch_ranks(options);
  ASSERT_TRUE(result.all_exited_with(0)) << result.describe();
  EXPECT_EQ(result.ranks[0].out, "rank 0/1 local 0: world 0/1 tp 0/1 pp 0/1 dp 0/1 stage 0/1 device 0 nccl " +
                                     std::to_string(NCCL_VERSION_CODE) + "\n");
}

TEST(NcclRig, LibraryExportsAnswersFromAChildProcess) {
  EXPECT_TRUE(library_exports(FAKE_NCCL_LIBRARY, "ncclAllReduce"));
  EXPECT_TRUE(library_exports(FAKE_NCCL_LIBRARY, "pncclCommSplit"));
  EXPECT_FALSE(library_exports(FAKE_NCCL_LIBRARY, "InitializeInjection"));
  EXPECT_FALSE(library_exports("/nonexistent/libnothing.so", "ncclAllReduce"));
}

TEST(NcclRig, ForwardingAllowsExtraQueriesButNoExtraOrMissingCall) {
  const std::vector<std::string> made = {"ncclCommInitRank a -> 0", "ncclAllReduce b -> 0",
                                         "ncclGroupEnd -> 0"};
  EXPECT_TRUE(forwarded_once_in_order(made, made));
  EXPECT_TRUE(
      forwarded_once_in_order(made, {"ncclCommInitRank a -> 0", "ncclCommCount c -> 0 out=8",
                                     "ncclAllReduce b -> 0", "ncclGroupEnd -> 0", "ncclGetVersion v"}));
  EXPECT_FALSE(forwarded_once_in_order(made, {"ncclCommInitRank a -> 0", "ncclGroupEnd -> 0"}));
  EXPECT_FALSE(forwarded_once_in_order(made, {"ncclCommInitRank a -> 0", "ncclAllReduce b -> 0",
                                              "ncclAllReduce b -> 0", "ncclGroupEnd -> 0"}));
  EXPECT_FALSE(forwarded_once_in_order(
      made, {"ncclCommInitRank a -> 0", "ncclAllReduce B -> 0", "ncclGroupEnd -> 0"}));
  EXPECT_FALSE(forwarded_once_in_order(
      made, {"ncclAllReduce b -> 0", "ncclCommInitRank a -> 0", "ncclGroupEnd -> 0"}));
}

// The crash program ends exactly as its mode says, after printing that it is ready.
struct CrashCase {
  const char* mode;
  int signal_number;  // 0: exits
  int exit_code;
};
void PrintTo(const CrashCase& test, std::ostream* out) { *out << test.mode; }

class CrashProgram : public ::testing::TestWithParam<CrashCase> {};

TEST_P(CrashProgram, DiesTheWayItsModeSays) {
  LaunchOptions options;
  options.argv = {CRASH_PROGRAM, GetParam().mode};
  // In sanitizer builds: let the fault kill the process, as it would without ASan.
  const char* asan = getenv("ASAN_OPTIONS");
  options.env = {{"ASAN_OPTIONS", std::string(asan ? asan : "") + ":handle_segv=0:handle_abort=0"}};
  const LaunchResult result = launch_ranks(options);
  const RankResult& rank = result.ranks[0];
  EXPECT_EQ(rank.out, std::string("crash_program: ") + GetParam().mode + " ready\n");
  if (GetParam().signal_number != 0) {
    EXPECT_TRUE(rank.killed_by(GetParam().signal_number)) << rank.status_text() << "\n" << rank.err;
  } else {
    EXPECT_TRUE(rank.exited_with(GetParam().exit_code)) << rank.status_text() << "\n" << rank.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CrashProgram,
                         ::testing::Values(CrashCase{"segv", SIGSEGV, 0}, CrashCase{"abort", SIGABRT, 0},
                                           CrashCase{"sigterm-self", SIGTERM, 0},
                                           CrashCase{"sigint-self", SIGINT, 0},
                                           CrashCase{"sigkill-self", SIGKILL, 0}, CrashCase{"exit3", 0, 3}),
                         [](const auto& test) {
                           std::string name = test.param.mode;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(CrashProgramSleep, RunsUntilSignalledAfterSayingReady) {
  LaunchOptions options;
  options.argv = {CRASH_PROGRAM, "sleep", "30"};
  RankProcesses job(options);
  ASSERT_TRUE(job.start());
  ASSERT_TRUE(job.wait_for_stdout(0, "crash_program: sleep ready\n"));
  EXPECT_TRUE(job.send_signal(0, SIGTERM));
  EXPECT_TRUE(job.wait().ranks[0].killed_by(SIGTERM));
}

TEST(CrashProgramSleep, ExitsZeroWhenNobodyStopsIt) {
  LaunchOptions options;
  options.argv = {CRASH_PROGRAM, "sleep", "0"};
  EXPECT_TRUE(launch_ranks(options).all_exited_with(0));
}

TEST(CrashProgramUsage, AnUnknownModeIsBadUsage) {
  LaunchOptions options;
  options.argv = {CRASH_PROGRAM, "explode"};
  const LaunchResult result = launch_ranks(options);
  EXPECT_TRUE(result.ranks[0].exited_with(2));
  EXPECT_EQ(result.ranks[0].out, "");
}

}  // namespace
}  // namespace pipescope::inject::testing
