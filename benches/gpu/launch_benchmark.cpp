#include "launch_benchmark.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "cuda_check.h"
#include "device_buffers.h"
#include "device_kernels.h"
#include "gpu_timing.h"

namespace pipescope::benches {
namespace {

constexpr int kKernels = 1000;
constexpr int kLaunchRepetitions = 5;

// The same `kKernels` launches captured once into a graph, replayed per timing.
class CapturedLaunches {
 public:
  template <class Launch>
  CapturedLaunches(cudaStream_t stream, Launch&& launch) {
    PIPESCOPE_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kKernels; ++i) launch(stream);
    cudaGraph_t graph = nullptr;
    PIPESCOPE_CUDA(cudaStreamEndCapture(stream, &graph));
    PIPESCOPE_CUDA(cudaGraphInstantiate(&exec_, graph, 0));
    PIPESCOPE_CUDA(cudaGraphDestroy(graph));
  }
  ~CapturedLaunches() { (void)cudaGraphExecDestroy(exec_); }
  CapturedLaunches(const CapturedLaunches&) = delete;
  CapturedLaunches& operator=(const CapturedLaunches&) = delete;

  void replay(cudaStream_t stream) const { PIPESCOPE_CUDA(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Per iteration: the kernels launched one at a time (the iteration's time, per kernel, and the
// host's time to issue them), then the same kernels replayed from a graph.
template <class Launch>
void time_gap(benchmark::State& state, Launch&& launch) {
  GpuTimer& t = gpu_timer();
  const CapturedLaunches graph(t.stream, launch);
  for (int i = 0; i < kWarmupLaunches; ++i) launch(t.stream);
  graph.replay(t.stream);
  PIPESCOPE_CUDA(cudaStreamSynchronize(t.stream));
  double streamed = 0, graphed = 0, host = 0;
  for (auto _ : state) {
    // The host's time to queue the launches: until seconds_per_launch hands over after them.
    const auto begin = std::chrono::steady_clock::now();
    double issued_s = 0;
    const double per_kernel = seconds_per_launch(kKernels, launch, [&] {
      issued_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    });
    const double replayed =
        seconds_per_launch(1, [&](cudaStream_t stream) { graph.replay(stream); }) / kKernels;
    streamed += per_kernel;
    graphed += replayed;
    host += issued_s / kKernels;
    state.SetIterationTime(per_kernel);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["stream_s_per_kernel"] = streamed / n;
  state.counters["graph_s_per_kernel"] = graphed / n;
  state.counters["host_s_per_launch"] = host / n;
  state.counters["gap_s_per_kernel"] = (streamed - graphed) / n;
  state.counters["kernels"] = kKernels;
}

void run_gap(benchmark::State& state, size_t bytes) {
  if (bytes == 0) {
    time_gap(state, [](cudaStream_t stream) { launch_empty(stream); });
    return;
  }
  void* x = device_slot(0).get(bytes, ElementKind::kBf16);
  void* y = device_slot(1).get(bytes, ElementKind::kBf16);
  if (x == nullptr || y == nullptr) {
    state.SkipWithError("not enough device memory for the operands");
    return;
  }
  time_gap(state, [&](cudaStream_t stream) { launch_copy(x, y, bytes, stream); });
}

}  // namespace

void register_launch_benchmarks() {
  for (size_t bytes : {size_t{0}, size_t{1} << 20, size_t{16} << 20}) {
    benchmark::RegisterBenchmark(("launch/gap/bytes:" + std::to_string(bytes)).c_str(),
                                 [bytes](benchmark::State& state) { run_gap(state, bytes); })
        ->UseManualTime()
        ->Iterations(kLaunchRepetitions)
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace pipescope::benches
