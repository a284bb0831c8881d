#include "hbm_benchmark.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "device_buffers.h"
#include "device_kernels.h"
#include "gpu_timing.h"

namespace pipescope::benches {
namespace {

// Bytes per timed iteration: 256 MiB is ~0.1 ms at 3 TB/s, well above the event overhead.
constexpr double kBytesPerIteration = 256.0 * (1 << 20);
constexpr double kCopyBytesPerIteration = 64.0 * (1 << 20);
// GPU seconds per benchmark (Google Benchmark's default, 0.5 s, for ~100 benchmarks is slow).
constexpr double kSecondsPerBenchmark = 0.1;

enum class Kernel { kCopy, kScale, kAdd, kNorm };

// Read plus written: one operand in and one out, two in for add.
double moved_bytes(Kernel kernel, size_t bytes) {
  return static_cast<double>(bytes) * (kernel == Kernel::kAdd ? 3 : 2);
}

void run_kernel(benchmark::State& state, Kernel kernel, size_t bytes, int hidden) {
  void* x = device_slot(0).get(bytes, ElementKind::kBf16);
  void* y = device_slot(1).get(bytes, ElementKind::kBf16);
  void* z = kernel == Kernel::kAdd ? device_slot(2).get(bytes, ElementKind::kBf16) : y;
  // The norm's weight: one row, read by every block (from L2: it is not counted).
  void* w =
      kernel == Kernel::kNorm ? device_slot(3).get(size_t{kRmsNormMaxHidden} * 2, ElementKind::kBf16) : y;
  if (x == nullptr || y == nullptr || z == nullptr || w == nullptr) {
    state.SkipWithError("not enough device memory for the operands");
    return;
  }
  const double moved = moved_bytes(kernel, bytes);
  const size_t rows = kernel == Kernel::kNorm ? bytes / (static_cast<size_t>(hidden) * 2) : 0;
  time_launches(state, batch_for(moved, kBytesPerIteration), [&](cudaStream_t stream) {
    switch (kernel) {
      case Kernel::kCopy: launch_copy(x, y, bytes, stream); break;
      case Kernel::kScale: launch_scale(x, y, bytes, stream); break;
      case Kernel::kAdd: launch_add(x, y, z, bytes, stream); break;
      case Kernel::kNorm: launch_rms_norm(x, w, y, rows, hidden, stream); break;
    }
  });
  state.counters["bytes"] = moved;
  state.counters["bytes_per_s"] =
      benchmark::Counter(moved * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

enum class Direction { kH2D, kD2H, kD2D };

void* pinned_host(size_t bytes) {
  static void* host = nullptr;
  static size_t host_bytes = 0;
  if (bytes > host_bytes) {
    if (host != nullptr) PIPESCOPE_CUDA(cudaFreeHost(host));
    host = nullptr;
    host_bytes = 0;
    if (cudaMallocHost(&host, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    host_bytes = bytes;
  }
  return host;
}

void run_memcpy(benchmark::State& state, Direction direction, size_t bytes) {
  void* device = device_slot(0).get(bytes, ElementKind::kBf16);
  void* other =
      direction == Direction::kD2D ? device_slot(1).get(bytes, ElementKind::kBf16) : pinned_host(bytes);
  if (device == nullptr || other == nullptr) {
    state.SkipWithError("not enough device or pinned host memory");
    return;
  }
  const double moved = static_cast<double>(bytes);
  time_launches(state, batch_for(moved, kCopyBytesPerIteration), [&](cudaStream_t stream) {
    switch (direction) {
      case Direction::kH2D:
        PIPESCOPE_CUDA(cudaMemcpyAsync(device, other, bytes, cudaMemcpyHostToDevice, stream));
        break;
      case Direction::kD2H:
        PIPESCOPE_CUDA(cudaMemcpyAsync(other, device, bytes, cudaMemcpyDeviceToHost, stream));
        break;
      case Direction::kD2D:
        PIPESCOPE_CUDA(cudaMemcpyAsync(other, device, bytes, cudaMemcpyDeviceToDevice, stream));
        break;
    }
  });
  state.counters["bytes"] = moved;
  state.counters["bytes_per_s"] =
      benchmark::Counter(moved * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

template <class Fn>
void add(const std::string& name, int batch, Fn fn) {
  benchmark::RegisterBenchmark(name.c_str(), fn)
      ->UseManualTime()
      ->MinTime(min_time_for_batch(kSecondsPerBenchmark, batch))
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_hbm_benchmarks(bool quick) {
  constexpr size_t kMin = size_t{1} << 20, kMax = size_t{1} << 30;
  const struct {
    const char* name;
    Kernel kernel;
  } kernels[] = {{"copy", Kernel::kCopy}, {"scale", Kernel::kScale}, {"add", Kernel::kAdd}};
  for (const auto& k : kernels) {
    for (size_t bytes = kMin; bytes <= kMax; bytes *= quick ? 4 : 2) {
      add(std::string("hbm/") + k.name + "/bytes:" + std::to_string(bytes),
          batch_for(moved_bytes(k.kernel, bytes), kBytesPerIteration),
          [kernel = k.kernel, bytes](benchmark::State& state) { run_kernel(state, kernel, bytes, 0); });
    }
  }
  for (int hidden : {4096, 8192}) {
    for (size_t bytes = kMin; bytes <= kMax; bytes *= quick ? 4 : 2) {
      add("hbm/norm/bytes:" + std::to_string(bytes) + "/hidden:" + std::to_string(hidden),
          batch_for(moved_bytes(Kernel::kNorm, bytes), kBytesPerIteration),
          [bytes, hidden](benchmark::State& state) { run_kernel(state, Kernel::kNorm, bytes, hidden); });
    }
  }
}

void register_memcpy_benchmarks(bool quick) {
  constexpr size_t kMin = size_t{4} << 10, kMax = size_t{1} << 30;
  const struct {
    const char* name;
    Direction direction;
  } directions[] = {{"h2d", Direction::kH2D}, {"d2h", Direction::kD2H}, {"d2d", Direction::kD2D}};
  for (const auto& d : directions) {
    for (size_t bytes = kMin; bytes <= kMax; bytes *= quick ? 4 : 2) {
      add(std::string("memcpy/") + d.name + "/bytes:" + std::to_string(bytes),
          batch_for(static_cast<double>(bytes), kCopyBytesPerIteration),
          [direction = d.direction, bytes](benchmark::State& state) { run_memcpy(state, direction, bytes); });
    }
  }
}

}  // namespace pipescope::benches
