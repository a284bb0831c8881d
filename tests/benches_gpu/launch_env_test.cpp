#include "launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace pipescope::benches {
namespace {

Expected<LaunchEnv> read(const std::map<std::string, std::string>& vars) {
  return read_launch_env([&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchEnv, NoLauncherIsOneRank) {
  const auto env = read({});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->local_rank, -1);
  EXPECT_EQ(env->launcher, "none");
}

TEST(LaunchEnv, Torchrun) {
  const auto env = read({{"RANK", "5"},
                         {"WORLD_SIZE", "16"},
                         {"LOCAL_RANK", "1"},
                         {"LOCAL_WORLD_SIZE", "4"},
                         {"MASTER_ADDR", "node0"},
                         {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->launcher, "torchrun");
  EXPECT_EQ(env->rank, 5);
  EXPECT_EQ(env->world_size, 16);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 4);
  EXPECT_EQ(env->master_addr, "node0");
  EXPECT_EQ(env->master_port, 29500);
}

TEST(LaunchEnv, SlurmWithItsTasksPerNodeForm) {
  const auto env = read({{"SLURM_PROCID", "3"},
                         {"SLURM_NTASKS", "8"},
                         {"SLURM_LOCALID", "3"},
                         {"SLURM_NTASKS_PER_NODE", "4(x2)"}});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->launcher, "slurm");
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 8);
  EXPECT_EQ(env->local_rank, 3);
  EXPECT_EQ(env->local_world_size, 4);
}

TEST(LaunchEnv, AProcessLauncherInsideASlurmAllocationWins) {
  // mpirun inside an sbatch script: Slurm's variables describe the batch step, not this rank.
  const auto mpi = read({{"SLURM_PROCID", "0"},
                         {"SLURM_NTASKS", "1"},
                         {"OMPI_COMM_WORLD_RANK", "6"},
                         {"OMPI_COMM_WORLD_SIZE", "8"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}});
  ASSERT_TRUE(mpi.ok());
  EXPECT_EQ(mpi->launcher, "openmpi");
  EXPECT_EQ(mpi->rank, 6);
  EXPECT_EQ(mpi->local_rank, 2);
  const auto torchrun =
      read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"RANK", "7"}, {"WORLD_SIZE", "8"}});
  ASSERT_TRUE(torchrun.ok());
  EXPECT_EQ(torchrun->launcher, "torchrun");
  EXPECT_EQ(torchrun->rank, 7);
  const auto pmi = read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
  ASSERT_TRUE(pmi.ok());
  EXPECT_EQ(pmi->launcher, "pmi");
  EXPECT_EQ(pmi->world_size, 2);
}

TEST(LaunchEnv, RejectsARankOutsideTheWorldOrANonNumber) {
  const auto outside = read({{"RANK", "8"}, {"WORLD_SIZE", "8"}});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("RANK=8 is not below WORLD_SIZE=8"), std::string::npos);
  EXPECT_FALSE(read({{"RANK", "x"}, {"WORLD_SIZE", "8"}}).ok());
  EXPECT_FALSE(read({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).ok());
}

}  // namespace
}  // namespace pipescope::benches
