// gpu_benchmark: the single-GPU part of the calibration suite (docs/calibration-results.md):
// cuBLASLt GEMMs (the table, the backward passes' layouts, attention's batched GEMMs, sustained
// clocks), memory-bound kernels, copies, compute beside a communication-like kernel, and launch
// gaps. Flags: --quick, then Google Benchmark's. Without a usable GPU: one "no GPU" line on
// stderr, no output file, exit 0.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "cuda_check.h"
#include "device_context.h"
#include "device_state.h"
#include "gemm_benchmark.h"
#include "hbm_benchmark.h"
#include "interference_benchmark.h"
#include "launch_benchmark.h"
#include "suite_args.h"
#include "sustained_benchmark.h"

int main(int argc, char** argv) {
  using namespace pipescope::benches;
  set_program_name("gpu_benchmark");
  const SuiteArgs args = take_suite_args(argc, argv);
  if (!args.error.empty()) {
    std::fprintf(stderr, "gpu_benchmark: %s\n", args.error.c_str());
    return 2;
  }
  if (const std::string reason = no_gpu_reason(); !reason.empty()) {
    std::fprintf(stderr, "%s\n", reason.c_str());
    return 0;
  }
  const DeviceInfo device = open_device(0, "gpu", args.command);
  // `pipescope calibrate run` lists first and checks the device before measuring anything.
  if (args.list_only) std::fprintf(stderr, "device: %s\n", device.name.c_str());
  register_device_state_benchmark("warm");
  register_gemm_benchmarks(device, args.quick);
  register_hbm_benchmarks(args.quick);
  register_memcpy_benchmarks(args.quick);
  register_gemm_layout_benchmarks(device);
  register_batched_gemm_benchmarks(device);
  register_interference_benchmarks();
  register_launch_benchmarks();
  // Last: it heats the GPU, which would lower what follows it.
  register_sustained_benchmark(args.quick);
  register_device_state_benchmark("end");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
