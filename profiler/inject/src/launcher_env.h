// Who launched this process and which rank it is, from the environment of torchrun, Slurm,
// Open MPI, MPICH (Hydra) and PMIx. Pure: tests feed it a map.
#pragma once

#include <optional>
#include <string>

#include "config.h"

namespace pipescope::inject {

struct LauncherInfo {
  std::string launcher;  // torchrun, slurm, openmpi, mpich, pmix; empty when none was found
  std::optional<int32_t> rank;
  std::optional<int32_t> local_rank;
  std::optional<int32_t> world_size;
  std::optional<int32_t> local_world_size;
  std::optional<int32_t> node_rank;
  std::optional<int32_t> restart_attempt;
  std::string run_id;
};

LauncherInfo detect_launcher(const EnvLookup& env);

}  // namespace pipescope::inject
