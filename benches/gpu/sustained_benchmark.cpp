#include "sustained_benchmark.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "clock_reasons.h"
#include "cublaslt_gemm.h"
#include "cuda_check.h"
#include "device_context.h"
#include "gpu_timing.h"
#include "nvml_reader.h"

namespace pipescope::benches {
namespace {

// An idle GPU drops its clocks and cools within a second or two; this long a rest makes the
// burst figure that of a GPU starting work, as a short benchmark sees it.
constexpr double kRestSeconds = 3.0;
constexpr double kBurstSeconds = 0.1;
constexpr double kWindowSeconds = 1.0;

struct Reading {
  double sm_clock_mhz = 0, power_w = 0, temperature_c = 0;
  std::string reasons;
};

Reading read_nvml() {
  Reading r;
  const NvmlDevice* nvml = device_nvml();
  if (nvml == nullptr) return r;
  if (auto v = nvml->sm_clock_mhz()) r.sm_clock_mhz = *v;
  if (auto v = nvml->power_w()) r.power_w = *v;
  if (auto v = nvml->temperature_c()) r.temperature_c = *v;
  if (auto v = nvml->clock_event_reasons()) r.reasons = clock_event_reason_names(*v);
  return r;
}

// Runs `launches` GEMMs, reads NVML halfway through while they run, returns their seconds.
double timed_window(const ReadyGemm& gemm, int launches, double expected_s, Reading& reading) {
  return launches * seconds_per_launch(
                        launches, [&](cudaStream_t stream) { gemm.run(stream); },
                        [&] {
                          std::this_thread::sleep_for(std::chrono::duration<double>(expected_s / 2));
                          reading = read_nvml();
                        });
}

void run_sustained(benchmark::State& state, GemmShape shape, double seconds) {
  ReadyGemm gemm;
  prepare_gemm(shape, GemmType::kBf16, GemmPass::kForward, gemm);
  if (!gemm.gemm) {
    state.SkipWithError(gemm.why.c_str());
    return;
  }
  const double flops = gemm.gemm->flops();
  for (auto _ : state) {
    GpuTimer& t = gpu_timer();
    gemm.run(t.stream);  // picks up the algorithm's one-time costs
    PIPESCOPE_CUDA(cudaStreamSynchronize(t.stream));
    std::this_thread::sleep_for(std::chrono::duration<double>(kRestSeconds));
    Reading burst_reading;
    Reading ignored;
    const double one = timed_window(gemm, 1, 0, ignored);
    const int burst_launches = std::max(1, static_cast<int>(kBurstSeconds / one));
    const double burst_s = timed_window(gemm, burst_launches, kBurstSeconds, burst_reading);
    const double burst = flops * burst_launches / burst_s;
    const int window_launches = std::max(1, static_cast<int>(kWindowSeconds * burst / flops));

    std::vector<double> rates;
    Reading last;
    double elapsed = burst_s;
    while (elapsed < seconds) {
      const double s = timed_window(gemm, window_launches, kWindowSeconds, last);
      elapsed += s;
      rates.push_back(flops * window_launches / s);
      std::fprintf(stderr,
                   "%s: sustained GEMM at %5.1f s: %6.1f TFLOP/s, SM %4.0f MHz, %5.1f W, %3.0f C, %s\n",
                   program_name(), elapsed, rates.back() / 1e12, last.sm_clock_mhz, last.power_w,
                   last.temperature_c, last.reasons.c_str());
    }
    // The settled rate: the median of the last quarter of the windows (at least three).
    const size_t tail = std::min(rates.size(), std::max<size_t>(3, rates.size() / 4));
    std::vector<double> settled(rates.end() - static_cast<std::ptrdiff_t>(tail), rates.end());
    std::sort(settled.begin(), settled.end());
    const double sustained = settled.empty() ? burst : settled[settled.size() / 2];
    state.SetIterationTime(flops / sustained);
    state.counters["flops"] = flops;
    state.counters["burst_flops_per_s"] = burst;
    state.counters["sustained_flops_per_s"] = sustained;
    state.counters["sustained_fraction"] = sustained / burst;
    state.counters["seconds"] = elapsed;
    state.counters["burst_sm_clock_mhz"] = burst_reading.sm_clock_mhz;
    state.counters["sustained_sm_clock_mhz"] = last.sm_clock_mhz;
    state.counters["sustained_power_w"] = last.power_w;
    state.counters["sustained_temperature_c"] = last.temperature_c;
    if (const NvmlDevice* nvml = device_nvml()) {
      if (auto v = nvml->power_limit_w()) state.counters["power_limit_w"] = *v;
    }
    state.SetLabel(device_nvml() == nullptr ? "no NVML: clocks and power unknown"
                                            : "clock_event_reasons " + last.reasons);
  }
}

}  // namespace

double sustained_seconds(bool quick) {
  if (const char* text = std::getenv("PIPESCOPE_SUSTAINED_SECONDS"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (end != nullptr && *end == '\0' && std::isfinite(value) && value >= 5) return value;
    fail_call("PIPESCOPE_SUSTAINED_SECONDS", "must be a number of seconds, at least 5");
  }
  return quick ? 30 : 60;
}

void register_sustained_benchmark(bool quick) {
  const double seconds = sustained_seconds(quick);
  const GemmShape shape{8192, 8192, 8192};
  benchmark::RegisterBenchmark(
      ("sustained/gemm/m:" + std::to_string(shape.m) + "/n:" + std::to_string(shape.n) +
       "/k:" + std::to_string(shape.k))
          .c_str(),
      [shape, seconds](benchmark::State& state) { run_sustained(state, shape, seconds); })
      ->UseManualTime()
      ->Iterations(1)
      ->Repetitions(1)  // a minute each: the suite's repetitions would triple it
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace pipescope::benches
