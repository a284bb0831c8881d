#include "launcher_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace pipescope::inject {
namespace {

LauncherInfo detect(const std::map<std::string, std::string>& vars) {
  return detect_launcher([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(LauncherEnv, NoLauncherLeavesTheRankUnknown) {
  const LauncherInfo info = detect({});
  EXPECT_TRUE(info.launcher.empty());
  EXPECT_FALSE(info.rank.has_value());
}

TEST(LauncherEnv, Torchrun) {
  const LauncherInfo info = detect({{"TORCHELASTIC_RUN_ID", "job42"},
                                    {"RANK", "13"},
                                    {"LOCAL_RANK", "5"},
                                    {"WORLD_SIZE", "16"},
                                    {"LOCAL_WORLD_SIZE", "8"},
                                    {"GROUP_RANK", "1"},
                                    {"TORCHELASTIC_RESTART_COUNT", "2"}});
  EXPECT_EQ(info.launcher, "torchrun");
  EXPECT_EQ(info.rank, 13);
  EXPECT_EQ(info.local_rank, 5);
  EXPECT_EQ(info.world_size, 16);
  EXPECT_EQ(info.local_world_size, 8);
  EXPECT_EQ(info.node_rank, 1);
  EXPECT_EQ(info.restart_attempt, 2);
  EXPECT_EQ(info.run_id, "job42");
}

TEST(LauncherEnv, TorchrunInsideSlurmTrustsTorchrunsRanks) {
  const LauncherInfo info = detect({{"TORCHELASTIC_RUN_ID", "r"},
                                    {"RANK", "9"},
                                    {"WORLD_SIZE", "16"},
                                    {"SLURM_PROCID", "1"},
                                    {"SLURM_NTASKS", "2"},
                                    {"SLURM_JOB_ID", "777"}});
  EXPECT_EQ(info.launcher, "torchrun");
  EXPECT_EQ(info.rank, 9);
  EXPECT_EQ(info.run_id, "r");
}

TEST(LauncherEnv, Slurm) {
  const LauncherInfo info = detect({{"SLURM_PROCID", "31"},
                                    {"SLURM_LOCALID", "7"},
                                    {"SLURM_NTASKS", "64"},
                                    {"SLURM_NTASKS_PER_NODE", "8(x8)"},
                                    {"SLURM_NODEID", "3"},
                                    {"SLURM_JOB_ID", "123456"},
                                    {"SLURM_RESTART_COUNT", "1"}});
  EXPECT_EQ(info.launcher, "slurm");
  EXPECT_EQ(info.rank, 31);
  EXPECT_EQ(info.local_rank, 7);
  EXPECT_EQ(info.world_size, 64);
  EXPECT_FALSE(info.local_world_size.has_value());  // "8(x8)" is not one number
  EXPECT_EQ(info.node_rank, 3);
  EXPECT_EQ(info.run_id, "123456");
  EXPECT_EQ(info.restart_attempt, 1);
}

TEST(LauncherEnv, OpenMpi) {
  const LauncherInfo info = detect({{"OMPI_COMM_WORLD_RANK", "3"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                    {"OMPI_COMM_WORLD_SIZE", "4"},
                                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                    {"PMIX_RANK", "3"}});
  EXPECT_EQ(info.launcher, "openmpi");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_world_size, 2);
}

TEST(LauncherEnv, MpichHydra) {
  const LauncherInfo info =
      detect({{"PMI_RANK", "2"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "4"}});
  EXPECT_EQ(info.launcher, "mpich");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_world_size, 4);
}

TEST(LauncherEnv, Pmix) {
  const LauncherInfo info = detect({{"PMIX_RANK", "5"}, {"PMIX_SIZE", "6"}, {"PMIX_NAMESPACE", "ns1"}});
  EXPECT_EQ(info.launcher, "pmix");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 6);
  EXPECT_EQ(info.run_id, "ns1");
}

TEST(LauncherEnv, GarbledRankFallsThroughToTheNextLauncher) {
  const LauncherInfo info =
      detect({{"TORCHELASTIC_RUN_ID", "r"}, {"RANK", "x"}, {"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "8"}});
  EXPECT_EQ(info.launcher, "slurm");
  EXPECT_EQ(info.rank, 4);
}

TEST(LauncherEnv, PlainRankVariables) {
  const LauncherInfo info = detect({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(info.launcher, "env");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
}

}  // namespace
}  // namespace pipescope::inject
