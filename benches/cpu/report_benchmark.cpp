// `pipescope report`'s engine (load every rank's trace, then build the report) on simulated
// runs of 64 and 1,024 ranks written by benches/support/synthetic_run.h. Reports throughput in
// uncompressed record bytes and records per second, per core, on one thread and on all cores,
// and the peak heap and peak resident memory (heap plus the mapped trace pages the scan holds)
// during a run. Target (issue 4): >= 500 MB/s of trace per core, memory independent of trace
// length (the 8-rank runs of 100 to 1,600 steps; the 1,024-rank runs of 12 and 48 steps).
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
#include <tuple>

#include "memory_peak.h"
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
// `hang`: rank 5 stops before the last step's gradient reduction and the others block in it
// (their flight recorders show the call in flight), as a job with one stopped rank.
const Fixture& fixture(int ranks, int steps, bool hang = false) {
  static std::map<std::tuple<int, int, bool>, Fixture> made;
  auto [it, fresh] = made.try_emplace({ranks, steps, hang});
  if (!fresh) return it->second;
  const char* base = std::getenv("PIPESCOPE_BENCH_DIR");
  it->second.dir = std::string(base != nullptr ? base : "/var/tmp") + "/pipescope-report-bench-" +
                   std::to_string(ranks) + "x" + std::to_string(steps) + (hang ? "-hang" : "");
  fs::remove_all(it->second.dir);
  fs::create_directories(it->second.dir);
  SyntheticRunSpec spec;
  spec.tp = ranks >= 64 ? 8 : 2;
  spec.pp = ranks >= 1024 ? 8 : ranks >= 64 ? 4 : 2;
  spec.dp = ranks / (spec.tp * spec.pp);
  spec.steps = steps;
  spec.kernels_per_microbatch = ranks >= 1024 ? 12 : ranks >= 64 ? 200 : 50;
  if (hang) {
    spec.hang_rank = 5;
    spec.hang_step = steps - 1;
    spec.hang_blocking = true;
  }
  auto truth = pipescope::synthetic::write_synthetic_run(spec, it->second.dir);
  if (!truth) {
    std::fprintf(stderr, "report_benchmark: %s\n", truth.error().message.c_str());
    std::exit(1);
  }
  it->second.truth = std::move(*truth);
  return it->second;
}

void BM_Report(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  const unsigned threads = state.range(2) == 0 ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
  const bool hang = state.range(3) != 0;
  const Fixture& f = fixture(ranks, steps, hang);
  pipescope::analysis::LoadOptions options;
  options.threads = threads;
  pipescope::analysis::ReportOptions report_options;
  report_options.threads = threads;
  auto report_once = [&] {
    auto run = pipescope::analysis::load_run(f.dir, options);
    if (!run) return run.error().message;
    auto report = pipescope::analysis::build_run_report(*run, report_options);
    benchmark::DoNotOptimize(report);
    return std::string();
  };
  // Memory is measured on a run of its own, before the timed ones: the sampler would take CPU
  // (and malloc's arena locks, which mallinfo2 holds while it walks the free lists) from them.
  pipescope::bench::MemoryPeak peak;
  if (const std::string error = report_once(); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  peak.stop();
  for (auto _ : state) {
    state.PauseTiming();
    malloc_trim(0);  // a run faults its heap in, as a fresh `pipescope report` process does
    state.ResumeTiming();
    report_once();
  }
  const double iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(f.truth.record_bytes) * state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(f.truth.records) * state.iterations());
  state.counters["MB_per_s_per_core"] = benchmark::Counter(
      static_cast<double>(f.truth.record_bytes) * iterations / 1e6 / threads, benchmark::Counter::kIsRate);
  state.counters["trace_MB"] = static_cast<double>(f.truth.record_bytes) / 1e6;
  state.counters["threads"] = threads;
  state.counters["peak_heap_MiB"] = static_cast<double>(peak.heap_bytes()) / (1 << 20);
  state.counters["peak_rss_MiB"] = static_cast<double>(peak.resident_bytes()) / (1 << 20);
}

// The cross-rank part alone (build_run_report on a run already loaded): clock alignment, layout
// and the analyses, which no trace length amortizes.
void BM_ReportBuild(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  const unsigned threads = state.range(2) == 0 ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
  const Fixture& f = fixture(ranks, steps);
  auto run = pipescope::analysis::load_run(f.dir, {});
  if (!run) {
    state.SkipWithError(run.error().message.c_str());
    return;
  }
  pipescope::analysis::ReportOptions options;
  options.threads = threads;
  for (auto _ : state) {
    auto report = pipescope::analysis::build_run_report(*run, options);
    benchmark::DoNotOptimize(report);
  }
  state.counters["threads"] = threads;
}
BENCHMARK(BM_ReportBuild)
    ->ArgNames({"ranks", "steps", "one_thread"})
    ->Args({1024, 3, 1})
    ->Args({1024, 3, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// {ranks, steps, one_thread (1: one thread, 0: every core), hang}. Throughput: 64 and 1,024 ranks.
// Memory against trace length: 8 ranks, 100 to 1,600 steps (68 MB to 1.1 GB of trace), and
// 1,024 ranks, 12 and 48 steps (354 MB and 1.4 GB), long enough for the per-rank caps of the
// digest to be reached (all of them but the 1,000 steps kept one by one).
// `hang` 1: the same run with one rank stopped before the last step and the others blocked
// waiting for it, diagnosed by the hang view (docs/benchmarks.md: it adds under 10 %).
BENCHMARK(BM_Report)
    ->ArgNames({"ranks", "steps", "one_thread", "hang"})
    ->Args({8, 3, 1, 0})
    ->Args({64, 3, 1, 0})
    ->Args({64, 3, 0, 0})
    ->Args({1024, 3, 1, 0})
    ->Args({1024, 3, 0, 0})
    ->Args({1024, 12, 0, 0})
    ->Args({1024, 48, 0, 0})
    ->Args({1024, 48, 0, 1})
    ->Args({8, 100, 0, 0})
    ->Args({8, 400, 0, 0})
    ->Args({8, 1600, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
