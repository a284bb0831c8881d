#include "launch_env.h"

#include <cstdlib>
#include <optional>

namespace pipescope::benches {
namespace {

struct Names {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

// Highest priority first (see launch_env.h).
constexpr Names kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

// A whole non-negative decimal number; SLURM_NTASKS_PER_NODE may read "4(x2)", of which the
// leading number counts.
std::optional<int> parse_int(const char* text, bool allow_suffix) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || value < 0 || value > (1L << 30)) return std::nullopt;
  if (*end != '\0' && !(allow_suffix && *end == '(')) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

Expected<LaunchEnv> read_launch_env(const GetEnv& getenv) {
  LaunchEnv env;
  for (const Names& n : kLaunchers) {
    const char* rank_text = getenv(n.rank);
    const char* size_text = getenv(n.size);
    if (rank_text == nullptr || size_text == nullptr) continue;
    const auto rank = parse_int(rank_text, false);
    const auto size = parse_int(size_text, false);
    if (!rank || !size || *size < 1) {
      return Error{std::string(n.rank) + "=" + rank_text + " " + n.size + "=" + size_text +
                   ": not a rank and a positive number of ranks"};
    }
    if (*rank >= *size) {
      return Error{std::string(n.rank) + "=" + rank_text + " is not below " + n.size + "=" + size_text};
    }
    env.launcher = n.launcher;
    env.rank = *rank;
    env.world_size = *size;
    if (const auto local = parse_int(getenv(n.local_rank), false)) env.local_rank = *local;
    if (const auto local_size = parse_int(getenv(n.local_size), true); local_size && *local_size > 0)
      env.local_world_size = *local_size;
    break;
  }
  if (const char* addr = getenv("MASTER_ADDR")) env.master_addr = addr;
  if (const auto port = parse_int(getenv("MASTER_PORT"), false); port && *port > 0 && *port < 65535)
    env.master_port = *port;
  return env;
}

}  // namespace pipescope::benches
