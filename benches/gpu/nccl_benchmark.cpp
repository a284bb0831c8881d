#include "nccl_benchmark.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include "collective_plan.h"
#include "cuda_check.h"
#include "gpu_timing.h"

namespace pipescope::benches {
namespace {

constexpr int kElementBytes = 2;  // bf16, the type of training's gradients and activations
constexpr int kIterations = 20;

void launch(Collective op, const CollectivePlan& p, const NcclJob& job, void* send, void* recv,
            cudaStream_t stream) {
  const size_t count = static_cast<size_t>(p.count);
  switch (op) {
    case Collective::kAllReduce:
      PIPESCOPE_NCCL(ncclAllReduce(send, recv, count, ncclBfloat16, ncclSum, job.comm, stream));
      break;
    case Collective::kAllGather:
      PIPESCOPE_NCCL(ncclAllGather(send, recv, count, ncclBfloat16, job.comm, stream));
      break;
    case Collective::kReduceScatter:
      PIPESCOPE_NCCL(ncclReduceScatter(send, recv, count, ncclBfloat16, ncclSum, job.comm, stream));
      break;
    case Collective::kBroadcast:
      PIPESCOPE_NCCL(ncclBroadcast(send, recv, count, ncclBfloat16, 0, job.comm, stream));
      break;
    case Collective::kSendRecv: {
      // A ring: rank r sends to r + 1 and receives from r - 1 (nccl-tests' sendrecv_perf).
      const int next = (job.rank + 1) % job.ranks, previous = (job.rank + job.ranks - 1) % job.ranks;
      PIPESCOPE_NCCL(ncclGroupStart());
      PIPESCOPE_NCCL(ncclSend(send, count, ncclBfloat16, next, job.comm, stream));
      PIPESCOPE_NCCL(ncclRecv(recv, count, ncclBfloat16, previous, job.comm, stream));
      PIPESCOPE_NCCL(ncclGroupEnd());
      break;
    }
    case Collective::kAllToAll: {
      const size_t chunk = count * kElementBytes;
      PIPESCOPE_NCCL(ncclGroupStart());
      for (int peer = 0; peer < job.ranks; ++peer) {
        PIPESCOPE_NCCL(
            ncclSend(static_cast<char*>(send) + chunk * peer, count, ncclBfloat16, peer, job.comm, stream));
        PIPESCOPE_NCCL(
            ncclRecv(static_cast<char*>(recv) + chunk * peer, count, ncclBfloat16, peer, job.comm, stream));
      }
      PIPESCOPE_NCCL(ncclGroupEnd());
      break;
    }
  }
}

// A device float for the barrier and for taking the slowest rank's time.
float* shared_scalar() {
  static float* scalar = [] {
    float* p = nullptr;
    PIPESCOPE_CUDA(cudaMalloc(&p, sizeof(float)));
    return p;
  }();
  return scalar;
}

// The slowest rank's time: a collective ends when its last rank is done.
double max_over_ranks(const NcclJob& job, double seconds, cudaStream_t stream) {
  float value = static_cast<float>(seconds);
  float* device = shared_scalar();
  PIPESCOPE_CUDA(cudaMemcpyAsync(device, &value, sizeof(float), cudaMemcpyHostToDevice, stream));
  PIPESCOPE_NCCL(ncclAllReduce(device, device, 1, ncclFloat32, ncclMax, job.comm, stream));
  PIPESCOPE_CUDA(cudaMemcpyAsync(&value, device, sizeof(float), cudaMemcpyDeviceToHost, stream));
  PIPESCOPE_CUDA(cudaStreamSynchronize(stream));
  return value;
}

void run(benchmark::State& state, Collective op, CollectivePlan p, const NcclJob& job, void* send, void* recv,
         cudaStream_t stream) {
  const int batch = operations_per_iteration(p.bytes);
  GpuTimer& t = gpu_timer();
  for (int i = 0; i < kWarmupLaunches; ++i) launch(op, p, job, send, recv, stream);
  PIPESCOPE_CUDA(cudaStreamSynchronize(stream));
  for (auto _ : state) {
    // Barrier: every rank starts the batch once all have reached it.
    PIPESCOPE_NCCL(
        ncclAllReduce(shared_scalar(), shared_scalar(), 1, ncclFloat32, ncclMax, job.comm, stream));
    PIPESCOPE_CUDA(cudaEventRecord(t.start, stream));
    for (int i = 0; i < batch; ++i) launch(op, p, job, send, recv, stream);
    PIPESCOPE_CUDA(cudaEventRecord(t.stop, stream));
    PIPESCOPE_CUDA(cudaEventSynchronize(t.stop));
    float ms = 0;
    PIPESCOPE_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop));
    state.SetIterationTime(max_over_ranks(job, ms * 1e-3 / batch, stream));
  }
  const double bytes = static_cast<double>(p.bytes), iterations = static_cast<double>(state.iterations());
  state.counters["bytes"] = bytes;
  state.counters["ranks"] = job.ranks;
  state.counters["nodes"] = job.nodes;
  state.counters["algbw"] = benchmark::Counter(bytes * iterations, benchmark::Counter::kIsRate);
  state.counters["busbw"] = benchmark::Counter(bytes * bus_bandwidth_factor(op, job.ranks) * iterations,
                                               benchmark::Counter::kIsRate);
}

}  // namespace

int64_t nccl_buffer_bytes(bool quick) {
  int64_t most = 0;
  for (int64_t size : collective_sizes(quick)) most = std::max(most, size);
  return most;
}

void register_nccl_benchmarks(const NcclJob& job, int ranks, bool quick, void* send, void* recv,
                              cudaStream_t stream) {
  for (Collective op : kAllCollectives) {
    for (int64_t size : collective_sizes(quick)) {
      const auto plan = plan_collective(op, size, ranks, kElementBytes);
      if (!plan) continue;
      const std::string name = "nccl/" + std::string(collective_name(op)) +
                               "/ranks:" + std::to_string(ranks) + "/bytes:" + std::to_string(plan->bytes);
      const NcclJob* j = &job;
      benchmark::RegisterBenchmark(name.c_str(),
                                   [op, p = *plan, j, send, recv, stream](benchmark::State& state) {
                                     run(state, op, p, *j, send, recv, stream);
                                   })
          ->UseManualTime()
          ->Iterations(kIterations)
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace pipescope::benches
