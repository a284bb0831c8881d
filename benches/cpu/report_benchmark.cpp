// `pipescope report`'s engine (load every rank's trace, then build the report) on simulated
// runs of 64 and 1,024 ranks written by benches/support/synthetic_run.h. Reports throughput in
// uncompressed record bytes and records per second, per core, on one thread and on all cores,
// and the peak heap in use during a run (mapped trace pages come and go with the page cache and
// are not the engine's). Target (issue 4): >= 500 MB/s of trace per core, memory
// independent of trace length (the 8-rank runs of 100 to 1,600 steps).
//
//   report_benchmark [--benchmark_filter=...]   (PIPESCOPE_BENCH_DIR: where runs are written)
#include <benchmark/benchmark.h>

#include <malloc.h>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <map>
#include <string>
#include <thread>

#include "pipescope/analysis/report_builder.h"
#include "pipescope/analysis/run_loader.h"
#include "synthetic_run.h"

namespace {

namespace fs = std::filesystem;
using pipescope::synthetic::SyntheticRunSpec;
using pipescope::synthetic::SyntheticRunTruth;

struct Fixture {
  std::string dir;
  SyntheticRunTruth truth;
};

// 64 ranks: tp 8 x pp 4 x dp 2, about 4 MB per rank at 3 steps; 1,024 ranks: tp 8 x pp 8 x
// dp 16, about 256 KB per rank; 8 ranks (the CI smoke run): tp 2 x pp 2 x dp 2. `steps`
// stretches the traces without changing their shape.
const Fixture& fixture(int ranks, int steps) {
  static std::map<std::pair<int, int>, Fixture> made;
  auto [it, fresh] = made.try_emplace({ranks, steps});
  if (!fresh) return it->second;
  const char* base = std::getenv("PIPESCOPE_BENCH_DIR");
  it->second.dir = std::string(base != nullptr ? base : "/var/tmp") + "/pipescope-report-bench-" +
                   std::to_string(ranks) + "x" + std::to_string(steps);
  fs::remove_all(it->second.dir);
  fs::create_directories(it->second.dir);
  SyntheticRunSpec spec;
  spec.tp = ranks >= 64 ? 8 : 2;
  spec.pp = ranks >= 1024 ? 8 : ranks >= 64 ? 4 : 2;
  spec.dp = ranks / (spec.tp * spec.pp);
  spec.steps = steps;
  spec.kernels_per_microbatch = ranks >= 1024 ? 12 : ranks >= 64 ? 200 : 50;
  auto truth = pipescope::synthetic::write_synthetic_run(spec, it->second.dir);
  if (!truth) {
    std::fprintf(stderr, "report_benchmark: %s\n", truth.error().message.c_str());
    std::exit(1);
  }
  it->second.truth = std::move(*truth);
  return it->second;
}

// Heap bytes in use (allocated and not freed), all arenas; mapped trace pages are not in it.
int64_t heap_in_use_bytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

// The highest heap use seen while it lives, above what was in use when it started, sampled
// every millisecond.
class HeapPeak {
 public:
  HeapPeak() : base_(heap_in_use_bytes()), peak_(base_) {
    sampler_ = std::thread([this] {
      while (!stop_.load()) {
        peak_.store(std::max(peak_.load(), heap_in_use_bytes()));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  ~HeapPeak() { stop(); }
  int64_t stop() {
    if (sampler_.joinable()) {
      stop_.store(true);
      sampler_.join();
    }
    return std::max<int64_t>(0, std::max(peak_.load(), heap_in_use_bytes()) - base_);
  }

 private:
  int64_t base_;
  std::atomic<int64_t> peak_;
  std::atomic<bool> stop_{false};
  std::thread sampler_;
};

void BM_Report(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  const unsigned threads = state.range(2) == 0 ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
  const Fixture& f = fixture(ranks, steps);
  pipescope::analysis::LoadOptions options;
  options.threads = threads;
  int64_t peak_bytes = 0;
  for (auto _ : state) {
    HeapPeak peak;
    auto run = pipescope::analysis::load_run(f.dir, options);
    if (!run) {
      state.SkipWithError(run.error().message.c_str());
      return;
    }
    auto report = pipescope::analysis::build_run_report(*run, {});
    benchmark::DoNotOptimize(report);
    peak_bytes = std::max(peak_bytes, peak.stop());
  }
  const double iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(f.truth.record_bytes) * state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(f.truth.records) * state.iterations());
  state.counters["MB_per_s_per_core"] = benchmark::Counter(
      static_cast<double>(f.truth.record_bytes) * iterations / 1e6 / threads, benchmark::Counter::kIsRate);
  state.counters["trace_MB"] = static_cast<double>(f.truth.record_bytes) / 1e6;
  state.counters["threads"] = threads;
  state.counters["peak_heap_MiB"] = static_cast<double>(peak_bytes) / (1 << 20);
}

// {ranks, steps, one_thread (1: one thread, 0: every core)}. Throughput: 64 and 1,024 ranks.
// Memory against trace length: 8 ranks, 100 to 1,600 steps (68 MB to 1.1 GB of trace), long
// enough for every per-rank cap of the digest to be reached.
BENCHMARK(BM_Report)
    ->ArgNames({"ranks", "steps", "one_thread"})
    ->Args({8, 3, 1})
    ->Args({64, 3, 1})
    ->Args({64, 3, 0})
    ->Args({1024, 3, 1})
    ->Args({1024, 3, 0})
    ->Args({1024, 12, 0})
    ->Args({8, 100, 0})
    ->Args({8, 400, 0})
    ->Args({8, 1600, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
