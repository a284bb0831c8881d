#include "device_state.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include "clock_reasons.h"
#include "cuda_check.h"
#include "device_buffers.h"
#include "device_context.h"
#include "device_kernels.h"
#include "gpu_timing.h"
#include "nvml_reader.h"

namespace pipescope::benches {
namespace {

constexpr size_t kLoadBytes = size_t{256} << 20;
constexpr double kWarmupSeconds = 1.0;
constexpr double kInFlightSeconds = 0.5;

// Seconds that `copies` copies of kLoadBytes take on the GPU.
double copy_seconds(void* x, void* y, int copies) {
  GpuTimer& t = gpu_timer();
  PIPESCOPE_CUDA(cudaEventRecord(t.start, t.stream));
  for (int i = 0; i < copies; ++i) launch_copy(x, y, kLoadBytes, t.stream);
  PIPESCOPE_CUDA(cudaEventRecord(t.stop, t.stream));
  PIPESCOPE_CUDA(cudaEventSynchronize(t.stop));
  float ms = 0;
  PIPESCOPE_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop));
  return ms * 1e-3;
}

void read_state(benchmark::State& state) {
  void* x = device_slot(0).get(kLoadBytes, ElementKind::kBf16);
  void* y = device_slot(1).get(kLoadBytes, ElementKind::kBf16);
  if (x == nullptr || y == nullptr) {
    state.SkipWithError("not enough device memory for the load");
    return;
  }
  const NvmlDevice* nvml = device_nvml();
  for (auto _ : state) {
    const double one = std::max(copy_seconds(x, y, 1), 1e-6);
    double loaded_s = one;
    while (loaded_s < kWarmupSeconds) loaded_s += copy_seconds(x, y, 20);
    // NVML is read while the GPU is busy: an idle GPU drops its clocks within milliseconds.
    GpuTimer& t = gpu_timer();
    const int copies = static_cast<int>(std::ceil(kInFlightSeconds / one));
    PIPESCOPE_CUDA(cudaEventRecord(t.start, t.stream));
    for (int i = 0; i < copies; ++i) launch_copy(x, y, kLoadBytes, t.stream);
    PIPESCOPE_CUDA(cudaEventRecord(t.stop, t.stream));
    std::this_thread::sleep_for(std::chrono::duration<double>(kInFlightSeconds / 2));
    if (nvml != nullptr) {
      if (auto v = nvml->sm_clock_mhz()) state.counters["sm_clock_mhz"] = *v;
      if (auto v = nvml->memory_clock_mhz()) state.counters["memory_clock_mhz"] = *v;
      if (auto v = nvml->power_w()) state.counters["power_w"] = *v;
      if (auto v = nvml->temperature_c()) state.counters["temperature_c"] = *v;
      if (auto v = nvml->performance_state()) state.counters["performance_state"] = *v;
      if (auto v = nvml->clock_event_reasons())
        state.SetLabel("clock_event_reasons " + clock_event_reason_names(*v));
    }
    PIPESCOPE_CUDA(cudaEventSynchronize(t.stop));
    float ms = 0;
    PIPESCOPE_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop));
    state.SetIterationTime(loaded_s + ms * 1e-3);
  }
  if (nvml == nullptr) state.SetLabel("no NVML: clocks and power unknown");
}

}  // namespace

void register_device_state_benchmark(const char* at) {
  benchmark::RegisterBenchmark((std::string("device/state/at:") + at).c_str(), read_state)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace pipescope::benches
