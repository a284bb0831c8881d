// The NCCL communicator of nccl_benchmark: one process per GPU, the unique id handed from rank 0
// through a rendezvous file (--rendezvous FILE or PIPESCOPE_RENDEZVOUS) or, under torchrun
// without one, over TCP to MASTER_ADDR:MASTER_PORT+1.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <string>

#include "launch_env.h"

namespace pipescope::benches {

void check_nccl(ncclResult_t result, const char* call);
#define PIPESCOPE_NCCL(call) ::pipescope::benches::check_nccl((call), #call)

struct NcclJob {
  ncclComm_t comm = nullptr;
  int rank = 0, ranks = 1;
  int nodes = 1, gpus_per_node = 1;
  // Device memory the communicator took: free memory before ncclCommInitRank and after it and
  // a first small call of every operation (NCCL connects peers and allocates their buffers
  // lazily, at the first operation that needs them). Empty when it could not be told.
  std::string buffer_bytes;
};

// Creates the communicator on the current device; the caller allocated its own buffers before,
// so that they are not counted. Exits with one line on stderr when the exchange fails.
// `timeout_s` bounds the wait for rank 0.
NcclJob open_nccl_job(const LaunchEnv& env, const std::string& rendezvous, double timeout_s,
                      cudaStream_t stream, void* scratch, size_t scratch_bytes);

// "2.28.9" from ncclGetVersion.
std::string nccl_version_text();

}  // namespace pipescope::benches
