#include "interference_benchmark.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "cublaslt_gemm.h"
#include "cuda_check.h"
#include "device_buffers.h"
#include "device_kernels.h"
#include "gpu_timing.h"

namespace pipescope::benches {
namespace {

// The background copy's operands: past the L2 of every GPU the suite runs on, so that it
// streams HBM as a collective's reads and writes do.
constexpr size_t kBackgroundBytes = size_t{256} << 20;
// The timed work per side: long enough that the background's start and stop are a small part.
constexpr double kWorkSeconds = 0.06;
constexpr int kMeasuredRepetitions = 3;
constexpr auto kStartTimeout = std::chrono::seconds(10);

// Host-mapped flags and counters of one background copy; its own buffers and stream.
class BackgroundCopy {
 public:
  BackgroundCopy() {
    PIPESCOPE_CUDA(cudaHostAlloc(&host_, sizeof(Shared), cudaHostAllocMapped));
    void* device = nullptr;
    PIPESCOPE_CUDA(cudaHostGetDevicePointer(&device, host_, 0));
    auto* d = static_cast<Shared*>(device);
    flags_ = {&d->stop, d->started, d->slices};
    PIPESCOPE_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    PIPESCOPE_CUDA(cudaMalloc(&x_, kBackgroundBytes));
    PIPESCOPE_CUDA(cudaMalloc(&y_, kBackgroundBytes));
    fill_random(x_, kBackgroundBytes / 2, ElementKind::kBf16, 7, stream_);
    PIPESCOPE_CUDA(cudaStreamSynchronize(stream_));
  }
  ~BackgroundCopy() {
    (void)cudaFree(y_);
    (void)cudaFree(x_);
    (void)cudaStreamDestroy(stream_);
    (void)cudaFreeHost(host_);
  }
  BackgroundCopy(const BackgroundCopy&) = delete;
  BackgroundCopy& operator=(const BackgroundCopy&) = delete;

  // Launches the copy on `blocks` blocks and waits until every block runs; false on a timeout
  // (the blocks could not all be resident), after which the copy is stopped.
  bool start(int blocks, unsigned pause_ns) {
    Shared* h = shared();
    h->stop = 0;
    for (int b = 0; b < blocks; ++b) {
      h->started[b] = 0;
      h->slices[b] = 0;
    }
    blocks_ = blocks;
    launch_background_copy(x_, y_, kBackgroundBytes, blocks, pause_ns, flags_, stream_);
    started_at_ = std::chrono::steady_clock::now();
    for (;;) {
      int running = 0;
      for (int b = 0; b < blocks; ++b) running += h->started[b];
      if (running == blocks) return true;
      if (std::chrono::steady_clock::now() - started_at_ > kStartTimeout) {
        stop();
        return false;
      }
      std::this_thread::yield();
    }
  }

  // Stops the copy; returns the bytes per second it read and wrote while it ran.
  double stop() {
    shared()->stop = 1;
    PIPESCOPE_CUDA(cudaStreamSynchronize(stream_));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count();
    unsigned long long slices = 0;
    for (int b = 0; b < blocks_; ++b) slices += shared()->slices[b];
    const double bytes =
        2.0 * 16.0 * static_cast<double>(kBackgroundSliceVectors) * static_cast<double>(slices);
    return seconds > 0 ? bytes / seconds : 0;
  }

 private:
  // Written by the device and read by the host (and the other way round) while both run.
  struct Shared {
    volatile int stop;
    volatile int started[kBackgroundCopyMaxBlocks];
    volatile unsigned long long slices[kBackgroundCopyMaxBlocks];
  };
  Shared* shared() const { return static_cast<Shared*>(host_); }

  void* host_ = nullptr;
  BackgroundCopyFlags flags_;
  cudaStream_t stream_ = nullptr;
  void *x_ = nullptr, *y_ = nullptr;
  int blocks_ = 0;
  std::chrono::steady_clock::time_point started_at_;
};

BackgroundCopy& background_copy() {
  static BackgroundCopy copy;
  return copy;
}

// Each iteration times the work alone, then beside the background copy; the iteration's time is
// the latter. Counters: both times, slowdown = beside / alone - 1, the background's bandwidth.
template <class Launch>
void time_interference(benchmark::State& state, int sms, unsigned pause_ns, Launch&& launch) {
  for (int i = 0; i < kWarmupLaunches; ++i) launch(gpu_timer().stream);
  PIPESCOPE_CUDA(cudaStreamSynchronize(gpu_timer().stream));
  const double one = seconds_per_launch(1, launch);
  const int batch = static_cast<int>(std::max(1.0, kWorkSeconds / std::max(one, 1e-7)));
  double alone = 0, beside = 0, background = 0;
  for (auto _ : state) {
    const double a = seconds_per_launch(batch, launch);
    if (!background_copy().start(sms, pause_ns)) {
      state.SkipWithError("the background copy's blocks did not all start within 10 s");
      return;
    }
    const double b = seconds_per_launch(batch, launch);
    background += background_copy().stop();
    alone += a;
    beside += b;
    state.SetIterationTime(b);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["alone_s"] = alone / n;
  state.counters["beside_s"] = beside / n;
  state.counters["slowdown"] = beside / alone - 1;
  state.counters["background_bytes_per_s"] = background / n;
  state.counters["sms"] = sms;
  state.counters["pause_ns"] = pause_ns;
}

void run_gemm_beside(benchmark::State& state, GemmShape shape, int sms, unsigned pause_ns) {
  ReadyGemm ready;
  prepare_gemm(shape, GemmType::kBf16, GemmPass::kForward, ready);
  if (!ready.gemm) {
    state.SkipWithError(ready.why.c_str());
    return;
  }
  state.SetLabel(ready.gemm->algorithm_label());
  time_interference(state, sms, pause_ns, [&](cudaStream_t stream) { ready.run(stream); });
}

void run_copy_beside(benchmark::State& state, size_t bytes, int sms, unsigned pause_ns) {
  void* x = device_slot(0).get(bytes, ElementKind::kBf16);
  void* y = device_slot(1).get(bytes, ElementKind::kBf16);
  if (x == nullptr || y == nullptr) {
    state.SkipWithError("not enough device memory for the operands");
    return;
  }
  time_interference(state, sms, pause_ns, [&](cudaStream_t stream) { launch_copy(x, y, bytes, stream); });
  state.counters["bytes"] = 2.0 * static_cast<double>(bytes);
}

template <class Fn>
void add(const std::string& name, Fn fn) {
  benchmark::RegisterBenchmark(name.c_str(), fn)
      ->UseManualTime()
      ->Iterations(kMeasuredRepetitions)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_interference_benchmarks() {
  for (int sms : kInterferenceSms) {
    for (unsigned pause_ns : kInterferencePausesNs) {
      const std::string tail = "/sms:" + std::to_string(sms) + "/pause_ns:" + std::to_string(pause_ns);
      for (const GemmShape& s : {GemmShape{8192, 8192, 8192}, GemmShape{4096, 4096, 4096}}) {
        add("interference/gemm/m:" + std::to_string(s.m) + "/n:" + std::to_string(s.n) +
                "/k:" + std::to_string(s.k) + tail,
            [s, sms, pause_ns](benchmark::State& state) { run_gemm_beside(state, s, sms, pause_ns); });
      }
      constexpr size_t kCopyBytes = size_t{1} << 30;
      add("interference/memory/bytes:" + std::to_string(kCopyBytes) + tail,
          [sms, pause_ns](benchmark::State& state) { run_copy_beside(state, kCopyBytes, sms, pause_ns); });
    }
  }
}

}  // namespace pipescope::benches
