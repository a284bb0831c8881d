// What an NVTX push/pop pair costs the calling thread under libpipescope.so (issue target:
// < 100 ns over the uninstrumented call): through NvtxRecorder with the trace open and capture
// on, the same with registered names, the same with capture off (before a PIPESCOPE_STEPS
// window), and NVTX's own call with no injection for the baseline. The recorder runs inside a
// shared object (nvtx_benchmark_shim), as it does in the library, so that thread-local storage
// costs what it costs there. docs/benchmarks.md records the results and the command.
//
// The rings are drained between batches with the timer paused: this measures the training
// thread's work (name lookup, clock read, ring append), not the framing and writing, which the
// library's flusher does on a thread of its own. Trace files go to $PIPESCOPE_BENCH_DIR (default
// /var/tmp), in a directory of this process's own that is removed at exit.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

// The header-only NVTX the application calls; with no injection it is NVTX's own no-op.
#include <nvtx3/nvToolsExt.h>

// nvtx_benchmark_shim.cpp
extern "C" {
void* nvtx_bench_open(const char* dir, long long first_step);
void nvtx_bench_close(void* bench);
int nvtx_bench_push(void* bench, const char* name);
const void* nvtx_bench_register(void* bench, const char* name);
int nvtx_bench_push_registered(void* bench, const void* name);
int nvtx_bench_pop(void* bench);
void nvtx_bench_flush(void* bench);
bool nvtx_bench_capturing(void* bench);
}

namespace {

std::string g_bench_dir;  // set in main before any benchmark runs
int g_runs = 0;           // each run writes a directory of its own: file names repeat per process

// A session and recorder of its own for one benchmark run.
class BenchRecorder {
 public:
  explicit BenchRecorder(long long first_step = -1)
      : dir_(g_bench_dir + "/run-" + std::to_string(g_runs++)),
        bench_(nvtx_bench_open(dir_.c_str(), first_step)) {}
  ~BenchRecorder() { nvtx_bench_close(bench_); }
  void* get() const { return bench_; }

 private:
  std::string dir_;
  void* bench_;
};

// Range names of a training step, cycled through as a framework would.
constexpr const char* kRangeNames[] = {"forward", "backward", "optimizer_step", "micro_batch"};

// 2^14 pairs = 1.5 MiB of records: well inside the 4 MiB ring, so nothing is dropped.
constexpr size_t kPairsPerDrain = size_t{1} << 14;

// Push and pop with `push(bench, i)` opening the i-th range of a cycle of four.
template <class Push>
void push_pop_loop(benchmark::State& state, void* bench, Push push) {
  // The first sight of each name (trace opening, interning, the step regex) is not the hot path.
  for (size_t i = 0; i < 4; ++i) {
    push(bench, i);
    nvtx_bench_pop(bench);
  }
  nvtx_bench_flush(bench);
  size_t pairs = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(push(bench, pairs & 3));
    benchmark::DoNotOptimize(nvtx_bench_pop(bench));
    if ((++pairs & (kPairsPerDrain - 1)) == 0) {
      state.PauseTiming();
      nvtx_bench_flush(bench);
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("time per push+pop pair");
}

void BM_NvtxPushPopUninstrumented(benchmark::State& state) {
  size_t pairs = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(nvtxRangePushA(kRangeNames[pairs++ & 3]));
    benchmark::DoNotOptimize(nvtxRangePop());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("time per push+pop pair");
}
BENCHMARK(BM_NvtxPushPopUninstrumented);

// Trace open, capture on: two records per pair.
void BM_NvtxPushPopRecorded(benchmark::State& state) {
  BenchRecorder bench;
  push_pop_loop(state, bench.get(), [](void* b, size_t i) { return nvtx_bench_push(b, kRangeNames[i]); });
}
BENCHMARK(BM_NvtxPushPopRecorded);

// The same with names the application registered once (nvtxDomainRegisterString).
void BM_NvtxPushPopRecordedRegistered(benchmark::State& state) {
  BenchRecorder bench;
  const void* names[4];
  for (size_t i = 0; i < 4; ++i) names[i] = nvtx_bench_register(bench.get(), kRangeNames[i]);
  push_pop_loop(state, bench.get(),
                [&names](void* b, size_t i) { return nvtx_bench_push_registered(b, names[i]); });
}
BENCHMARK(BM_NvtxPushPopRecordedRegistered);

// Trace open, capture off: a step window that never opens. Steps are still counted, so the
// name is still looked up; nothing is appended.
void BM_NvtxPushPopCaptureOff(benchmark::State& state) {
  BenchRecorder bench(/*first_step=*/1LL << 40);
  push_pop_loop(state, bench.get(), [](void* b, size_t i) { return nvtx_bench_push(b, kRangeNames[i]); });
  if (nvtx_bench_capturing(bench.get())) state.SkipWithError("the capture window opened");
}
BENCHMARK(BM_NvtxPushPopCaptureOff);

}  // namespace

int main(int argc, char** argv) {
  // The baseline must be NVTX's no-op, whatever the shell says.
  unsetenv("NVTX_INJECTION64_PATH");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const char* base = std::getenv("PIPESCOPE_BENCH_DIR");
  g_bench_dir = std::string(base != nullptr && *base != '\0' ? base : "/var/tmp") + "/pipescope-nvtx-bench." +
                std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::create_directories(g_bench_dir, ec);
  if (ec) {
    std::fprintf(stderr, "nvtx_benchmark: cannot create %s: %s\n", g_bench_dir.c_str(), ec.message().c_str());
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(g_bench_dir, ec);
  return 0;
}
