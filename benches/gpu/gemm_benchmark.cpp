#include "gemm_benchmark.h"

#include <benchmark/benchmark.h>
#include <cublasLt.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cublaslt_gemm.h"
#include "cuda_check.h"
#include "datasheet_peak.h"
#include "gemm_shapes.h"
#include "gpu_timing.h"

namespace pipescope::benches {
namespace {

// FLOPs per timed iteration: ~0.2 ms at the H100's peak, so events cost under a percent.
constexpr double kFlopsPerIteration = 2e11;
// GPU seconds per GEMM benchmark. The full suite has ~3,000 of them (985 shapes x 3
// types); at Google Benchmark's default 0.5 s that is half an hour per repetition. A GEMM under
// a millisecond still runs hundreds of times in 0.1 s; the largest (llama3-405b's MLP at TP 1,
// ~80 ms) run twice, where the variation between launches is small anyway.
constexpr double kSecondsPerGemm = 0.1;

double gemm_flops(const GemmShape& s, int64_t batch = 1) {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(s.m) * static_cast<double>(s.n) *
         static_cast<double>(s.k);
}

void run_gemm(benchmark::State& state, GemmShape s, GemmType type, GemmPass pass, std::optional<double> peak,
              int64_t batch = 1) {
  ReadyGemm ready;
  prepare_gemm(s, type, pass, ready, batch);
  if (!ready.gemm) {
    state.SkipWithError(ready.why.c_str());
    return;
  }
  state.SetLabel(ready.gemm->algorithm_label());
  const double flops = gemm_flops(s, batch);
  const double total_s = time_launches(state, batch_for(flops, kFlopsPerIteration),
                                       [&](cudaStream_t stream) { ready.run(stream); });
  const double iterations = static_cast<double>(state.iterations());
  state.counters["flops"] = flops;
  state.counters["flops_per_s"] = benchmark::Counter(flops * iterations, benchmark::Counter::kIsRate);
  if (peak && total_s > 0) state.counters["peak_fraction"] = flops * iterations / total_s / *peak;
}

void register_one(const std::string& name, GemmShape s, GemmType type, GemmPass pass,
                  std::optional<double> peak, int64_t batch = 1) {
  benchmark::RegisterBenchmark(
      name.c_str(),
      [s, type, pass, peak, batch](benchmark::State& state) { run_gemm(state, s, type, pass, peak, batch); })
      ->UseManualTime()
      ->MinTime(min_time_for_batch(kSecondsPerGemm, batch_for(gemm_flops(s, batch), kFlopsPerIteration)))
      ->Unit(benchmark::kMicrosecond);
}

std::string shape_name(const GemmShape& s) {
  return "/m:" + std::to_string(s.m) + "/n:" + std::to_string(s.n) + "/k:" + std::to_string(s.k);
}

}  // namespace

void register_gemm_benchmarks(const DeviceInfo& device, bool quick) {
  const SuiteShapes shapes = suite_gemm_shapes(quick);
  if (!shapes.error.empty()) fail_call("suite_gemm_shapes", shapes.error.c_str());
  benchmark::AddCustomContext("cublaslt_version", std::to_string(cublasLtGetVersion()));
  std::vector<GemmType> types = {GemmType::kBf16, GemmType::kFp16};
  // FP8 tensor cores: Ada (8.9) and Hopper (9.0) onwards.
  if (device.cc_major * 10 + device.cc_minor >= 89) types.push_back(GemmType::kFp8);
  for (GemmType type : types) {
    const GemmTypeInfo t = gemm_type_info(type);
    const std::optional<double> peak = dense_peak_flops_per_s(device.name, t.variant);
    for (const GemmShape& s : shapes.shapes) {
      if (type == GemmType::kFp8 && !fp8_compatible(s)) continue;
      register_one(std::string("gemm/") + t.variant + shape_name(s), s, type, GemmPass::kForward, peak);
    }
  }
}

void register_gemm_layout_benchmarks(const DeviceInfo& device) {
  const SuiteLayoutShapes shapes = suite_layout_shapes();
  if (!shapes.error.empty()) fail_call("suite_layout_shapes", shapes.error.c_str());
  const std::optional<double> peak = dense_peak_flops_per_s(device.name, "bf16");
  for (const PassShape& p : shapes.shapes) {
    register_one(std::string("gemm_layout/bf16") + shape_name(p.shape) + "/pass:" + gemm_pass_name(p.pass),
                 p.shape, GemmType::kBf16, p.pass, peak);
  }
}

void register_batched_gemm_benchmarks(const DeviceInfo& device) {
  const std::optional<double> peak = dense_peak_flops_per_s(device.name, "bf16");
  for (const BatchedGemm& g : suite_batched_attention_gemms()) {
    register_one(std::string("gemm_batched/bf16/batch:") + std::to_string(g.batch) + shape_name(g.shape) +
                     "/pass:" + gemm_pass_name(g.pass) + "/form:" + batched_form_name(g.form),
                 g.shape, GemmType::kBf16, g.pass, peak, g.batch);
  }
}

}  // namespace pipescope::benches
