#include "nccl_comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "cuda_check.h"
#include "rendezvous_file.h"
#include "tcp_rendezvous.h"

namespace pipescope::benches {
namespace {

[[noreturn]] void fail_exchange(const std::string& message) {
  fail_call("the NCCL id exchange", message.c_str());
}

ncclUniqueId exchange_id(const LaunchEnv& env, const std::string& rendezvous, double timeout_s) {
  ncclUniqueId id{};
  if (env.rank == 0) PIPESCOPE_NCCL(ncclGetUniqueId(&id));
  if (env.world_size == 1) return id;
  const std::string bytes(id.internal, sizeof(id.internal));
  if (!rendezvous.empty()) {
    if (env.rank == 0) {
      Status published = publish_id_file(rendezvous, bytes, env.world_size);
      if (!published.ok()) fail_exchange(published.error().message);
      return id;
    }
    auto got = wait_for_id_file(rendezvous, env.world_size, timeout_s);
    if (!got.ok()) fail_exchange(got.error().message);
    if (got->size() != sizeof(id.internal))
      fail_exchange("the rendezvous file holds an id of the wrong size");
    std::memcpy(id.internal, got->data(), sizeof(id.internal));
    return id;
  }
  if (env.master_addr.empty() || env.master_port == 0) {
    fail_exchange("WORLD_SIZE is " + std::to_string(env.world_size) +
                  " but there is no way to reach rank 0: pass --rendezvous FILE (a path every rank can read) "
                  "or set PIPESCOPE_RENDEZVOUS, or MASTER_ADDR and MASTER_PORT as torchrun does");
  }
  const int port = env.master_port + 1;
  if (env.rank == 0) {
    Status served = serve_id(port, bytes, env.world_size - 1, timeout_s);
    if (!served.ok()) fail_exchange(served.error().message);
    return id;
  }
  auto got = fetch_id(env.master_addr, port, sizeof(id.internal), timeout_s);
  if (!got.ok()) fail_exchange(got.error().message);
  std::memcpy(id.internal, got->data(), sizeof(id.internal));
  return id;
}

// One small call of every operation the benchmark runs, so that the communicator has connected
// the peers it needs before its memory is counted.
void touch_every_operation(const NcclJob& job, cudaStream_t stream, void* scratch) {
  const int n = job.ranks;
  char* buffer = static_cast<char*>(scratch);
  char* out = buffer + 64 * n;
  PIPESCOPE_NCCL(ncclAllReduce(buffer, out, 8, ncclBfloat16, ncclSum, job.comm, stream));
  PIPESCOPE_NCCL(ncclAllGather(buffer, out, 8, ncclBfloat16, job.comm, stream));
  PIPESCOPE_NCCL(ncclReduceScatter(buffer, out, 8, ncclBfloat16, ncclSum, job.comm, stream));
  PIPESCOPE_NCCL(ncclBroadcast(buffer, out, 8, ncclBfloat16, 0, job.comm, stream));
  PIPESCOPE_NCCL(ncclGroupStart());
  for (int peer = 0; peer < n; ++peer) {
    PIPESCOPE_NCCL(ncclSend(buffer + 16 * peer, 8, ncclBfloat16, peer, job.comm, stream));
    PIPESCOPE_NCCL(ncclRecv(out + 16 * peer, 8, ncclBfloat16, peer, job.comm, stream));
  }
  PIPESCOPE_NCCL(ncclGroupEnd());
  PIPESCOPE_CUDA(cudaStreamSynchronize(stream));
}

// Nodes are the distinct host names, gathered through the communicator itself.
int count_nodes(const NcclJob& job, cudaStream_t stream, void* scratch) {
  constexpr size_t kName = 64;
  char host[kName] = {};
  gethostname(host, kName - 1);
  char* device = static_cast<char*>(scratch);
  PIPESCOPE_CUDA(cudaMemcpyAsync(device, host, kName, cudaMemcpyHostToDevice, stream));
  PIPESCOPE_NCCL(ncclAllGather(device, device + kName, kName, ncclChar, job.comm, stream));
  std::vector<char> all(kName * static_cast<size_t>(job.ranks));
  PIPESCOPE_CUDA(cudaMemcpyAsync(all.data(), device + kName, all.size(), cudaMemcpyDeviceToHost, stream));
  PIPESCOPE_CUDA(cudaStreamSynchronize(stream));
  std::set<std::string> names;
  for (int r = 0; r < job.ranks; ++r) names.insert(std::string(all.data() + kName * r, kName).c_str());
  return static_cast<int>(names.size());
}

}  // namespace

void check_nccl(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) fail_call(call, ncclGetErrorString(result));
}

NcclJob open_nccl_job(const LaunchEnv& env, const std::string& rendezvous, double timeout_s,
                      cudaStream_t stream, void* scratch, size_t scratch_bytes) {
  // Scratch holds the host names of every rank and the touch calls' operands.
  if (scratch_bytes < 128 * static_cast<size_t>(env.world_size) + 1024)
    fail_call("open_nccl_job", "the scratch buffer is too small");
  NcclJob job;
  job.rank = env.rank;
  job.ranks = env.world_size;
  const ncclUniqueId id = exchange_id(env, rendezvous, timeout_s);
  size_t free_before = 0, free_after = 0, total = 0;
  PIPESCOPE_CUDA(cudaDeviceSynchronize());
  PIPESCOPE_CUDA(cudaMemGetInfo(&free_before, &total));
  PIPESCOPE_NCCL(ncclCommInitRank(&job.comm, env.world_size, id, env.rank));
  // Every rank has read the id once the (collective) init returns: the file can go.
  if (env.rank == 0 && !rendezvous.empty() && env.world_size > 1) std::remove(rendezvous.c_str());
  touch_every_operation(job, stream, scratch);
  PIPESCOPE_CUDA(cudaMemGetInfo(&free_after, &total));
  if (free_before >= free_after) job.buffer_bytes = std::to_string(free_before - free_after);
  job.nodes = count_nodes(job, stream, scratch);
  job.gpus_per_node = env.local_world_size > 0 ? env.local_world_size : std::max(1, job.ranks / job.nodes);
  return job;
}

std::string nccl_version_text() {
  int version = 0;
  PIPESCOPE_NCCL(ncclGetVersion(&version));
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9.
  return std::to_string(version / 10000) + "." + std::to_string((version % 10000) / 100) + "." +
         std::to_string(version % 100);
}

}  // namespace pipescope::benches
