// The PyTorch profiler (Kineto) reader, on traces benches/support/kineto_trace.h writes (one rank
// of an FSDP-style LLM job, as Kineto lays them out), plain and gzip'ed:
//   BM_KinetoConvert   one file read, inflated, parsed and converted to a pipescope trace, on one
//                      core: MB of JSON per second, and the peak resident memory against the
//                      target of 1.5 x the document plus 30 MiB;
//   BM_KinetoReport    `pipescope report`'s work on a directory of 4 ranks: the traces converted
//                      in parallel, loaded and the report built, per core of the machine.
// Targets (issue 24): >= 500 MB of JSON per second per core end to end; memory as above.
//
//   kineto_benchmark [--benchmark_filter=...]   (PIPESCOPE_BENCH_DIR: where traces are written)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kineto_trace.h"
#include "memory_peak.h"
#include "pipescope/analysis/kineto_import.h"
#include "pipescope/analysis/report_builder.h"
#include "pipescope/analysis/run_loader.h"

namespace {

namespace fs = std::filesystem;
using pipescope::synthetic::KinetoTraceSpec;
using pipescope::synthetic::KinetoTraceTruth;

std::string bench_dir() {
  const char* base = std::getenv("PIPESCOPE_BENCH_DIR");
  return std::string(base != nullptr ? base : "/var/tmp") + "/pipescope-kineto-bench";
}

struct Fixture {
  std::vector<std::string> inputs;
  std::vector<KinetoTraceTruth> truths;
  std::string converted_dir;
  uint64_t json_bytes = 0;  // all ranks
  uint64_t largest_json_bytes = 0;
};

// `ranks` traces of at least `megabytes` of JSON each, written once per process.
const Fixture& fixture(int ranks, int megabytes, bool gzip) {
  static std::map<std::tuple<int, int, bool>, Fixture> made;
  auto [it, fresh] = made.try_emplace({ranks, megabytes, gzip});
  Fixture& f = it->second;
  if (!fresh) return f;
  const std::string dir = bench_dir() + "/" + std::to_string(ranks) + "x" + std::to_string(megabytes) + "MB" +
                          (gzip ? "-gz" : "");
  f.converted_dir = dir + "-converted";
  for (const std::string& d : {dir, f.converted_dir}) {
    fs::remove_all(d);
    fs::create_directories(d);
  }
  for (int rank = 0; rank < ranks; ++rank) {
    KinetoTraceSpec spec;
    spec.rank = rank;
    spec.world_size = std::max(ranks, 8);
    spec.json_bytes = uint64_t(megabytes) * 1'000'000;
    spec.gzip = gzip;
    const std::string path =
        dir + "/rank-" + std::to_string(rank) + (gzip ? ".pt.trace.json.gz" : ".pt.trace.json");
    auto truth = pipescope::synthetic::write_kineto_trace(spec, path);
    if (!truth) {
      std::fprintf(stderr, "kineto_benchmark: %s\n", truth.error().message.c_str());
      std::exit(1);
    }
    f.inputs.push_back(path);
    f.truths.push_back(*truth);
    f.json_bytes += truth->json_bytes;
    f.largest_json_bytes = std::max(f.largest_json_bytes, truth->json_bytes);
  }
  return f;
}

std::vector<std::string> converted_paths(const Fixture& f) {
  std::vector<std::string> out;
  for (size_t i = 0; i < f.inputs.size(); ++i)
    out.push_back(f.converted_dir + "/kineto-" + std::to_string(i) + ".pst");
  return out;
}

void memory_counters(benchmark::State& state, const pipescope::bench::MemoryPeak& peak,
                     uint64_t document_bytes, unsigned workers) {
  const double mib = 1 << 20;
  state.counters["peak_rss_MiB"] = static_cast<double>(peak.resident_bytes()) / mib;
  state.counters["target_rss_MiB"] = workers * (1.5 * static_cast<double>(document_bytes) / mib + 30);
}

void BM_KinetoConvert(benchmark::State& state) {
  const bool gzip = state.range(0) != 0;
  const Fixture& f = fixture(1, static_cast<int>(state.range(1)), gzip);
  const std::string out = converted_paths(f)[0];
  fs::remove(out);  // an earlier repetition's (--benchmark_repetitions)
  pipescope::bench::MemoryPeak peak;
  if (auto s = pipescope::analysis::convert_kineto_trace(f.inputs[0], out); !s) {
    state.SkipWithError(s.error().message.c_str());
    return;
  }
  peak.stop();
  const double pst_bytes = static_cast<double>(fs::file_size(out));
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove(out);  // the writer never replaces a trace
    state.ResumeTiming();
    if (auto s = pipescope::analysis::convert_kineto_trace(f.inputs[0], out); !s) {
      state.SkipWithError(s.error().message.c_str());
      return;
    }
  }
  const double iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(f.json_bytes) * state.iterations());
  state.counters["JSON_MB_per_s_per_core"] =
      benchmark::Counter(static_cast<double>(f.json_bytes) * iterations / 1e6, benchmark::Counter::kIsRate);
  state.counters["JSON_MB"] = static_cast<double>(f.json_bytes) / 1e6;
  state.counters["file_MB"] = static_cast<double>(f.truths[0].file_bytes) / 1e6;
  state.counters["pst_MB"] = pst_bytes / 1e6;
  memory_counters(state, peak, f.largest_json_bytes, 1);
}
BENCHMARK(BM_KinetoConvert)
    ->ArgNames({"gzip", "MB"})
    ->ArgsProduct({{0, 1}, {32, 512}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

void BM_KinetoReport(benchmark::State& state) {
  const bool gzip = state.range(0) != 0;
  const int ranks = static_cast<int>(state.range(1));
  const Fixture& f = fixture(ranks, static_cast<int>(state.range(2)), gzip);
  const std::vector<std::string> outputs = converted_paths(f);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  auto report_once = [&]() -> std::string {
    if (auto s = pipescope::analysis::convert_kineto_traces(f.inputs, outputs); !s) return s.error().message;
    auto run = pipescope::analysis::load_run(f.converted_dir, {});
    if (!run) return run.error().message;
    auto report = pipescope::analysis::build_run_report(*run, {});
    benchmark::DoNotOptimize(report);
    return {};
  };
  auto remove_converted = [&] {
    for (const std::string& path : outputs) fs::remove(path);
  };
  remove_converted();  // an earlier repetition's (--benchmark_repetitions)
  pipescope::bench::MemoryPeak peak;
  if (const std::string error = report_once(); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  peak.stop();
  for (auto _ : state) {
    state.PauseTiming();
    remove_converted();
    state.ResumeTiming();
    if (const std::string error = report_once(); !error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
  const double iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(f.json_bytes) * state.iterations());
  state.counters["JSON_MB_per_s_per_core"] = benchmark::Counter(
      static_cast<double>(f.json_bytes) * iterations / 1e6 / cores, benchmark::Counter::kIsRate);
  state.counters["JSON_MB"] = static_cast<double>(f.json_bytes) / 1e6;
  state.counters["cores"] = cores;
  memory_counters(state, peak, f.largest_json_bytes, std::min<unsigned>(cores, static_cast<unsigned>(ranks)));
}
BENCHMARK(BM_KinetoReport)
    ->ArgNames({"gzip", "ranks", "MB"})
    ->ArgsProduct({{0, 1}, {4}, {512}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
