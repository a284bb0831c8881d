// nccl/<operation>/ranks:/bytes: (docs/calibration-results.md), nccl-tests' sizes and bandwidths.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "nccl_comm.h"

namespace pipescope::benches {

// The largest send and receive buffer any registered benchmark needs.
int64_t nccl_buffer_bytes(bool quick);

// Registers every operation at every size in the same order on every rank, with a fixed number
// of iterations: Google Benchmark's adaptive count could differ between ranks and leave one
// waiting in a collective the others never call. `job` is read when the benchmarks run, so it
// may be filled in after registering (a --benchmark_list_tests run creates no communicator).
void register_nccl_benchmarks(const NcclJob& job, int ranks, bool quick, void* send, void* recv,
                              cudaStream_t stream);

}  // namespace pipescope::benches
