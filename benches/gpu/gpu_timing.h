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

// Seconds per launch of `batch` launches between the timer's two events; `while_running` is
// called after they are queued, before waiting for them (e.g. to read NVML while the GPU works).
template <class Launch, class WhileRunning>
double seconds_per_launch(int batch, Launch&& launch, WhileRunning&& while_running) {
  GpuTimer& t = gpu_timer();
  PIPESCOPE_CUDA(cudaEventRecord(t.start, t.stream));
  for (int i = 0; i < batch; ++i) launch(t.stream);
  PIPESCOPE_CUDA(cudaEventRecord(t.stop, t.stream));
  while_running();
  PIPESCOPE_CUDA(cudaEventSynchronize(t.stop));
  float ms = 0;
  PIPESCOPE_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop));
  return ms * 1e-3 / batch;
}

template <class Launch>
double seconds_per_launch(int batch, Launch&& launch) {
  return seconds_per_launch(batch, launch, [] {});
}

// Runs the benchmark loop; every iteration's time is that of one launch. Returns the total
// measured seconds (iterations x time per launch).
template <class Launch>
double time_launches(benchmark::State& state, int batch, Launch&& launch) {
  GpuTimer& t = gpu_timer();
  for (int i = 0; i < kWarmupLaunches; ++i) launch(t.stream);
  PIPESCOPE_CUDA(cudaStreamSynchronize(t.stream));
  double total_s = 0;
  for (auto _ : state) {
    const double seconds = seconds_per_launch(batch, launch);
    state.SetIterationTime(seconds);
    total_s += seconds;
  }
  return total_s;
}

}  // namespace pipescope::benches
