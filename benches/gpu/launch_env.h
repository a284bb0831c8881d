// Who this process is in a multi-GPU job, read from the launcher's environment: torchrun (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Open MPI
// (OMPI_COMM_WORLD_*), PMI (PMI_RANK, PMI_SIZE: MPICH, Intel MPI) or Slurm (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID). Pure logic: the environment comes in as a function.
#pragma once

#include <functional>
#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::benches {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = -1;            // -1: the launcher does not say (the caller picks rank % GPUs)
  int local_world_size = -1;      // -1: unknown (nodes are then counted from host names)
  std::string launcher = "none";  // torchrun, openmpi, pmi, slurm, none
  std::string master_addr;        // torchrun's, for the TCP exchange of the NCCL id
  int master_port = 0;
};

using GetEnv = std::function<const char*(const char*)>;

// The first launcher whose variables are all there wins, in the order above: a torchrun or
// mpirun started inside a Slurm allocation sees Slurm's variables too, and they describe the
// allocation rather than this process. No variables: one rank. Fails on a value that is not a
// number, or a rank outside the world.
Expected<LaunchEnv> read_launch_env(const GetEnv& getenv);

}  // namespace pipescope::benches
