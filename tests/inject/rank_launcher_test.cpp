// The launcher the injection tests start their pretend jobs with: torchrun's environment,
// captured output and status, and no hang whatever the processes do.
#include "rank_launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <string>

namespace pipescope::inject::testing {
namespace {

LaunchOptions shell(const std::string& script, int world_size = 1) {
  LaunchOptions options;
  options.argv = {"/bin/sh", "-c", script};
  options.world_size = world_size;
  return options;
}

TEST(RankLauncher, GivesEachRankTorchrunsEnvironment) {
  LaunchOptions options = shell(
      "echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE "
      "$TORCHELASTIC_RUN_ID $TORCHELASTIC_RESTART_COUNT $MASTER_ADDR",
      4);
  options.local_world_size = 2;
  options.run_id = "job42";
  options.restart_count = 1;
  const LaunchResult result = launch_ranks(options);
  ASSERT_TRUE(result.all_exited_with(0)) << result.describe();
  EXPECT_EQ(result.ranks[0].out, "0 0 4 2 0 2 job42 1 127.0.0.1\n");
  EXPECT_EQ(result.ranks[1].out, "1 1 4 2 0 2 job42 1 127.0.0.1\n");
  EXPECT_EQ(result.ranks[2].out, "2 0 4 2 1 2 job42 1 127.0.0.1\n");
  EXPECT_EQ(result.ranks[3].out, "3 1 4 2 1 2 job42 1 127.0.0.1\n");
}

TEST(RankLauncher, CapturesStdoutStderrAndTheExitCodeOfEachRank) {
  const LaunchResult result = launch_ranks(shell("echo out $RANK; echo err >&2; exit $((RANK + 3))", 2));
  ASSERT_EQ(result.ranks.size(), 2u);
  EXPECT_EQ(result.ranks[0].out, "out 0\n");
  EXPECT_EQ(result.ranks[1].err, "err\n");
  EXPECT_TRUE(result.ranks[0].exited_with(3));
  EXPECT_TRUE(result.ranks[1].exited_with(4));
  EXPECT_GT(result.ranks[1].pid, 0);
  EXPECT_FALSE(result.timed_out);
}

TEST(RankLauncher, ReportsTheSignalThatKilledARank) {
  const LaunchResult result = launch_ranks(shell("kill -SEGV $$"));
  EXPECT_TRUE(result.ranks[0].killed_by(SIGSEGV)) << result.describe();
  EXPECT_EQ(result.ranks[0].exit_code, -1);
}

TEST(RankLauncher, KillsEveryRankAndWhatItStartedAtTheDeadline) {
  // The background sleep keeps stdout open after the shell would be gone: the group kill ends it.
  LaunchOptions options = shell("sleep 30 & sleep 30", 2);
  options.timeout = std::chrono::milliseconds(300);
  const auto started = std::chrono::steady_clock::now();
  const LaunchResult result = launch_ranks(options);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_TRUE(result.timed_out);
  for (const RankResult& rank : result.ranks) {
    EXPECT_TRUE(rank.timed_out);
    EXPECT_TRUE(rank.killed_by(SIGKILL)) << rank.status_text();
  }
}

TEST(RankLauncher, LeavesOutTheTestProcesssOwnLauncherAndInjectionVariables) {
  setenv("SLURM_PROCID", "5", 1);
  setenv("PIPESCOPE_OUTPUT", "/nowhere", 1);
  LaunchOptions options =
      shell("echo ${SLURM_PROCID:-unset} ${PIPESCOPE_OUTPUT:-unset} ${LD_PRELOAD:-unset}");
  const LaunchResult result = launch_ranks(options);
  unsetenv("SLURM_PROCID");
  unsetenv("PIPESCOPE_OUTPUT");
  EXPECT_EQ(result.ranks[0].out, "unset unset unset\n");
}

TEST(RankLauncher, SetsPreloadExtraAndPerRankVariablesAndCanLeaveOutTorchrun) {
  LaunchOptions options = shell("echo ${RANK:-none} $LD_PRELOAD $A $B", 2);
  options.torchrun_env = false;
  options.preload = "/nonexistent/libpreload.so";  // the loader only warns on stderr
  options.env = {{"A", "a"}, {"B", "b"}};
  options.rank_env = [](int rank) {
    return std::vector<std::pair<std::string, std::string>>{{"B", "b" + std::to_string(rank)}};
  };
  const LaunchResult result = launch_ranks(options);
  EXPECT_EQ(result.ranks[0].out, "none /nonexistent/libpreload.so a b0\n");
  EXPECT_EQ(result.ranks[1].out, "none /nonexistent/libpreload.so a b1\n");
}

TEST(RankLauncher, GivesEachRankItsOwnArguments) {
  LaunchOptions options;
  options.world_size = 2;
  options.argv_for_rank = [](int rank) {
    return std::vector<std::string>{"/bin/sh", "-c", "echo mode-" + std::to_string(rank * 10)};
  };
  const LaunchResult result = launch_ranks(options);
  EXPECT_EQ(result.ranks[1].out, "mode-10\n");
}

TEST(RankLauncher, WaitsForAPhraseThenSignalsThatRank) {
  RankProcesses job(shell("echo ready $RANK; exec sleep 30", 2));
  ASSERT_TRUE(job.start());
  ASSERT_TRUE(job.wait_for_stdout(1, "ready 1"));
  ASSERT_TRUE(job.wait_for_stdout(0, "ready 0"));
  EXPECT_TRUE(job.send_signal(0, SIGTERM));
  EXPECT_TRUE(job.send_signal(1, SIGKILL));
  const LaunchResult result = job.wait();
  EXPECT_TRUE(result.ranks[0].killed_by(SIGTERM)) << result.describe();
  EXPECT_TRUE(result.ranks[1].killed_by(SIGKILL)) << result.describe();
  EXPECT_FALSE(result.timed_out);
}

TEST(RankLauncher, WaitForStdoutGivesUpWhenTheRankEndsWithoutThePhrase) {
  RankProcesses job(shell("echo something else"));
  ASSERT_TRUE(job.start());
  EXPECT_FALSE(job.wait_for_stdout(0, "ready"));
  EXPECT_TRUE(job.wait().all_exited_with(0));
}

TEST(RankLauncher, AProgramThatCannotBeStartedExits127) {
  LaunchOptions options;
  options.argv = {"/nonexistent/program"};
  const LaunchResult result = launch_ranks(options);
  EXPECT_TRUE(result.ranks[0].exited_with(127));
  EXPECT_NE(result.ranks[0].err.find("execve failed"), std::string::npos);
}

}  // namespace
}  // namespace pipescope::inject::testing
