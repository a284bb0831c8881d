// trace_overhead: what recording a kernel costs, per kernel, apart from any framework. Chains of
// identical kernels on one stream, timed with CUDA events, run once without a profiler and once
// under each capture setting (scripts/gpu-overhead.py): the difference in time per kernel is
// what the setting adds to every kernel a training step launches (docs/profiler.md, "What
// capture costs"). Kernels of fixed arithmetic (no timer reads, so the profiler cannot change
// what they measure), from empty to ~50 us; the empty one is bound by the host's launch rate,
// the others by the GPU. Flags: Google Benchmark's. Without a GPU: "no GPU", exit 0, no file.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>

#include "cuda_check.h"
#include "device_context.h"

namespace pipescope::benches {
namespace {

// `iterations` dependent FMAs per thread: ~2 ns each on a Hopper SM at its boost clock.
__global__ void fma_chain(float* out, int iterations) {
  float x = static_cast<float>(threadIdx.x) * 1e-3f;
  for (int i = 0; i < iterations; ++i) x = fmaf(x, 0.9999f, 1e-4f);
  if (x == -1.0f) out[blockIdx.x] = x;  // never true: keeps the loop, writes nothing
}

constexpr int kChainLength = 500;  // kernels per timed iteration
constexpr int kThreadsPerBlock = 128;

void BM_KernelChain(benchmark::State& state) {
  const int iterations = static_cast<int>(state.range(0));
  int sms = 0;
  PIPESCOPE_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  float* out = nullptr;
  PIPESCOPE_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  PIPESCOPE_CUDA(cudaEventCreate(&start));
  PIPESCOPE_CUDA(cudaEventCreate(&stop));
  PIPESCOPE_CUDA(cudaMalloc(&out, sizeof(float) * sms));
  auto chain = [&] {
    for (int k = 0; k < kChainLength; ++k) fma_chain<<<sms, kThreadsPerBlock, 0, stream>>>(out, iterations);
  };
  chain();  // warm-up: the module loads, CUPTI sets up its buffers
  PIPESCOPE_CUDA(cudaStreamSynchronize(stream));
  double host_launch_s = 0;
  for (auto _ : state) {
    PIPESCOPE_CUDA(cudaEventRecord(start, stream));
    const auto host_start = std::chrono::steady_clock::now();
    chain();
    host_launch_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
    PIPESCOPE_CUDA(cudaEventRecord(stop, stream));
    PIPESCOPE_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    PIPESCOPE_CUDA(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms * 1e-3 / kChainLength);  // one kernel's share
  }
  const double launches = static_cast<double>(state.iterations()) * kChainLength;
  state.counters["host_launch_us"] = launches > 0 ? host_launch_s * 1e6 / launches : 0;
  state.counters["fma_per_thread"] = iterations;
  PIPESCOPE_CUDA(cudaFree(out));
  PIPESCOPE_CUDA(cudaEventDestroy(start));
  PIPESCOPE_CUDA(cudaEventDestroy(stop));
  PIPESCOPE_CUDA(cudaStreamDestroy(stream));
}
// A fixed count: with manual time per kernel, a minimum time would run 500 times too long.
BENCHMARK(BM_KernelChain)->Arg(0)->Arg(1000)->Arg(5000)->Arg(25000)->UseManualTime()->Unit(benchmark::kMicrosecond)
    ->Iterations(10)->Repetitions(3)->ReportAggregatesOnly(true);

}  // namespace
}  // namespace pipescope::benches

int main(int argc, char** argv) {
  using namespace pipescope::benches;
  if (const std::string reason = no_gpu_reason(); !reason.empty()) {
    std::fprintf(stderr, "trace_overhead: %s\n", reason.c_str());
    return 0;
  }
  open_device(0, "trace_overhead", argc > 0 ? argv[0] : "trace_overhead");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
