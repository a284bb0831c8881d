#include "launcher_env.h"

#include <charconv>
#include <string_view>

namespace pipescope::inject {
namespace {

std::optional<int32_t> int_from(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  if (value == nullptr) return std::nullopt;
  const std::string_view text(value);
  int32_t parsed = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || parsed < 0)
    return std::nullopt;
  return parsed;
}

std::string string_from(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  return value != nullptr ? value : "";
}

// The names each launcher sets, in the order they are trusted.
struct LauncherVars {
  const char* launcher;
  const char* marker;  // set by this launcher alone
  const char* rank;
  const char* local_rank;
  const char* world_size;
  const char* local_world_size;
  const char* node_rank;
  const char* restart_attempt;
  const char* run_id;
};

// torchrun first: under `srun torchrun ...` both are set and torchrun's ranks are the workers'.
// Slurm's SLURM_PROCID is the task's rank only when srun started one task per rank, which is
// the case whenever a rank variable of a deeper launcher is absent.
constexpr LauncherVars kLaunchers[] = {
    {"torchrun", "TORCHELASTIC_RUN_ID", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
     "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK", nullptr,
     "OMPI_MCA_orte_ess_jobid"},
    {"mpich", "PMI_RANK", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "MPI_LOCALNRANKS", nullptr, nullptr,
     "PMI_KVSNAME"},
    {"pmix", "PMIX_RANK", "PMIX_RANK", "PMIX_LOCAL_RANK", "PMIX_SIZE", "PMIX_LOCAL_SIZE", "PMIX_NODE_RANK",
     nullptr, "PMIX_NAMESPACE"},
    {"slurm", "SLURM_PROCID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE",
     "SLURM_NODEID", "SLURM_RESTART_COUNT", "SLURM_JOB_ID"},
};

}  // namespace

LauncherInfo detect_launcher(const EnvLookup& env) {
  LauncherInfo info;
  for (const LauncherVars& vars : kLaunchers) {
    if (env(vars.marker) == nullptr) continue;
    const auto rank = int_from(env, vars.rank);
    if (!rank) continue;  // the marker without a usable rank: try the next launcher
    info.launcher = vars.launcher;
    info.rank = rank;
    info.local_rank = int_from(env, vars.local_rank);
    info.world_size = int_from(env, vars.world_size);
    info.local_world_size = int_from(env, vars.local_world_size);
    if (vars.node_rank != nullptr) info.node_rank = int_from(env, vars.node_rank);
    if (vars.restart_attempt != nullptr) info.restart_attempt = int_from(env, vars.restart_attempt);
    info.run_id = string_from(env, vars.run_id);
    break;
  }
  // Plain `python -m torch.distributed.launch`-style or hand-set environments: RANK alone.
  if (info.launcher.empty()) {
    if (auto rank = int_from(env, "RANK")) {
      info.launcher = "env";
      info.rank = rank;
      info.local_rank = int_from(env, "LOCAL_RANK");
      info.world_size = int_from(env, "WORLD_SIZE");
      info.local_world_size = int_from(env, "LOCAL_WORLD_SIZE");
    }
  }
  // A Slurm job id names the run when the launcher gave none.
  if (info.run_id.empty()) info.run_id = string_from(env, "SLURM_JOB_ID");
  if (!info.restart_attempt) info.restart_attempt = int_from(env, "SLURM_RESTART_COUNT");
  return info;
}

}  // namespace pipescope::inject
