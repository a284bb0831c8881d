// Timing on the GPU with CUDA events (docs/calibration-results.md: manual time, never host
// time): a few warm-up launches, then per benchmark iteration a batch of launches between two
// events, the batch's time divided by its size.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda_check.h"
#include "launch_batch.h"

namespace pipescope::benches {

// The stream and the two events every benchmark of a program times with.
struct GpuTimer {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};
GpuTimer& gpu_timer();

inline constexpr int kWarmupLaunches = 3;

// Runs the benchmark loop; every iteration's time is that of one launch. Returns the total
// measured seconds (iterations x time per launch).
template <class Launch>
double time_launches(benchmark::State& state, int batch, Launch&& launch) {
  GpuTimer& t = gpu_timer();
  for (int i = 0; i < kWarmupLaunches; ++i) launch(t.stream);
  PIPESCOPE_CUDA(cudaStreamSynchronize(t.stream));
  double total_s = 0;
  for (auto _ : state) {
    PIPESCOPE_CUDA(cudaEventRecord(t.start, t.stream));
    for (int i = 0; i < batch; ++i) launch(t.stream);
    PIPESCOPE_CUDA(cudaEventRecord(t.stop, t.stream));
    PIPESCOPE_CUDA(cudaEventSynchronize(t.stop));
    float ms = 0;
    PIPESCOPE_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop));
    const double seconds = ms * 1e-3 / batch;
    state.SetIterationTime(seconds);
    total_s += seconds;
  }
  return total_s;
}

}  // namespace pipescope::benches
