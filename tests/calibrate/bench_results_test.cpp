// Reading the suite's Google Benchmark JSON (docs/calibration-results.md).
#include <gtest/gtest.h>

#include "pipescope/calibrate/bench_results.h"

namespace pipescope::calibrate {
namespace {

TEST(BenchResults, ReadsEveryFamilyFromTheNames) {
  const char* text = R"({
    "context": {"gpu_name": "NVIDIA H100 80GB HBM3", "sm_count": "132"},
    "benchmarks": [
      {"name": "gemm/bf16/m:4096/n:1024/k:512/manual_time", "run_name": "gemm/bf16/m:4096/n:1024/k:512/manual_time",
       "run_type": "iteration", "real_time": 25.0, "time_unit": "us", "flops": 4294967296},
      {"name": "attention/backward/batch:2/heads:32/seq:4096/head_dim:128/causal:1", "run_type": "iteration",
       "real_time": 3.5, "time_unit": "ms", "flops": 1.2e12, "label": "torch sdpa flash"},
      {"name": "hbm/copy/bytes:1048576/manual_time", "run_type": "iteration", "real_time": 800, "time_unit": "ns",
       "bytes": 2097152},
      {"name": "nccl/all_gather/ranks:8/bytes:65536/manual_time", "run_type": "iteration", "real_time": 0.02,
       "time_unit": "ms", "bytes": 65536, "ranks": 8, "nodes": 1, "busbw": 1e9, "algbw": 1e9},
      {"name": "device/state/at:end/manual_time/iterations:1", "run_type": "iteration", "real_time": 1500,
       "time_unit": "ms", "sm_clock_mhz": 1410, "memory_clock_mhz": 2619, "power_w": 699.5, "temperature_c": 81,
       "label": "clock_event_reasons sw_power_cap"},
      {"name": "something/else", "run_type": "iteration", "real_time": 1, "time_unit": "ns"}
    ]})";
  BenchResults r;
  ASSERT_TRUE(add_bench_results(text, "gpu.json", r).ok());
  ASSERT_EQ(r.gemm.size(), 1u);
  EXPECT_EQ(r.gemm[0].m, 4096);
  EXPECT_EQ(r.gemm[0].n, 1024);
  EXPECT_EQ(r.gemm[0].k, 512);
  EXPECT_DOUBLE_EQ(r.gemm[0].seconds, 25e-6);
  ASSERT_EQ(r.attention.size(), 1u);
  EXPECT_TRUE(r.attention[0].backward);
  EXPECT_TRUE(r.attention[0].causal);
  EXPECT_EQ(r.attention[0].kernel, "torch sdpa flash");
  EXPECT_DOUBLE_EQ(r.attention[0].seconds, 3.5e-3);
  ASSERT_EQ(r.bandwidth.size(), 1u);
  EXPECT_DOUBLE_EQ(r.bandwidth[0].bytes, 2097152);
  EXPECT_EQ(r.bandwidth[0].operand_bytes, 1048576);
  EXPECT_EQ(r.bandwidth[0].hidden, 0);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].kind, "all_gather");
  EXPECT_EQ(r.collectives[0].ranks, 8);
  ASSERT_EQ(r.device_states.size(), 1u);
  EXPECT_EQ(r.device_states[0].at, "end");
  EXPECT_DOUBLE_EQ(r.device_states[0].sm_clock_mhz, 1410);
  EXPECT_DOUBLE_EQ(r.device_states[0].power_w, 699.5);
  EXPECT_EQ(r.device_states[0].clock_event_reasons, "sw_power_cap");
  EXPECT_EQ(r.context_value("sm_count"), "132");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "skipped 'something/else' in gpu.json: not a calibration benchmark");
}

TEST(BenchResults, AttentionsBatchedGemmsAreSkippedInOneNote) {
  const char* text = R"({"benchmarks": [
      {"name": "gemm_batched/bf16/batch:384/m:2048/n:2048/k:96/pass:forward/form:batched/manual_time",
       "run_type": "iteration", "real_time": 2000, "time_unit": "us"},
      {"name": "gemm_batched/bf16/batch:1/m:2048/n:2048/k:96/pass:forward/form:one_matrix/manual_time",
       "run_type": "iteration", "real_time": 20, "time_unit": "us"},
      {"name": "gemm/bf16/m:64/n:64/k:64/manual_time", "run_type": "iteration", "real_time": 1, "time_unit": "us"}
    ]})";
  BenchResults r;
  ASSERT_TRUE(add_bench_results(text, "gpu.json", r).ok());
  EXPECT_EQ(r.gemm.size(), 1u);
  EXPECT_EQ(r.batched_gemms_skipped, 2);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(
      r.notes[0],
      "skipped the gemm_batched results: not fitted yet (scripts/gpu-batched-gemm-compare.py reads them)");
}

TEST(BenchResults, TakesTheMedianOfRepetitions) {
  const char* text = R"({"benchmarks": [
      {"name": "gemm/bf16/m:64/n:64/k:64/repeats:3", "run_type": "iteration", "real_time": 1, "time_unit": "us"},
      {"name": "gemm/bf16/m:64/n:64/k:64/repeats:3", "run_type": "iteration", "real_time": 9, "time_unit": "us"},
      {"name": "gemm/bf16/m:64/n:64/k:64/repeats:3_mean", "run_name": "gemm/bf16/m:64/n:64/k:64/repeats:3",
       "run_type": "aggregate", "aggregate_name": "mean", "real_time": 4, "time_unit": "us"},
      {"name": "gemm/bf16/m:64/n:64/k:64/repeats:3_median", "run_name": "gemm/bf16/m:64/n:64/k:64/repeats:3",
       "run_type": "aggregate", "aggregate_name": "median", "real_time": 2, "time_unit": "us"}]})";
  BenchResults r;
  ASSERT_TRUE(add_bench_results(text, "r.json", r).ok());
  ASSERT_EQ(r.gemm.size(), 1u);
  EXPECT_DOUBLE_EQ(r.gemm[0].seconds, 2e-6);
}

std::string error_of(const std::string& text) {
  BenchResults r;
  Status s = add_bench_results(text, "r.json", r);
  return s.ok() ? "(read)" : s.error().message;
}

TEST(BenchResults, RefusesWhatIsNotAMeasurement) {
  EXPECT_EQ(error_of("{\"benchmarks\": [}").substr(0, 40), "benchmark results 'r.json' are not JSON ");
  EXPECT_EQ(error_of("{\"context\": {}}"),
            "benchmark results 'r.json' have no \"benchmarks\" list: not a Google Benchmark JSON file");
  EXPECT_EQ(error_of("{\"benchmarks\": []}"),
            "benchmark results 'r.json' hold no measurement (an empty \"benchmarks\" list)");
  EXPECT_EQ(
      error_of(R"({"benchmarks": [{"name": "gemm/bf16/m:1/n:1/k:1", "real_time": -3, "time_unit": "us"}]})"),
      "benchmark results 'r.json': entry 'gemm/bf16/m:1/n:1/k:1' has time -3 us; a measured time must be a "
      "positive finite number");
  EXPECT_EQ(
      error_of(R"({"benchmarks": [{"name": "gemm/bf16/m:x/n:1/k:1", "real_time": 3, "time_unit": "us"}]})"),
      "benchmark results 'r.json': entry 'gemm/bf16/m:x/n:1/k:1' has 'm:x', not a non-negative integer");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"name": "nccl/all_reduce/ranks:2/bytes:8", "real_time": 3}]})"),
            "benchmark results 'r.json': entry 'nccl/all_reduce/ranks:2/bytes:8' lacks the counter 'bytes'");
  // A field of the wrong type is named by its path, not read as something else.
  EXPECT_EQ(error_of(R"({"benchmarks": [{"name": 5, "real_time": 3}]})"),
            "benchmark results 'r.json': field 'benchmarks[0].name' must be a string, got 5");
  EXPECT_EQ(
      error_of(R"({"benchmarks": [{"name": "launch/gap", "real_time": 3, "error_occurred": "yes"}]})"),
      "benchmark results 'r.json': field 'benchmarks[0].error_occurred' must be true or false, got \"yes\"");
  EXPECT_EQ(error_of(R"({"benchmarks": [3]})"),
            "benchmark results 'r.json': field 'benchmarks[0]' must be an object, got 3");
}

TEST(BenchResults, NamesNonFiniteCountersAndOutOfRangeNumbers) {
  // Google Benchmark's JSON reporter writes a number it could not compute as a bare NaN.
  EXPECT_EQ(
      error_of(R"({"benchmarks": [{"name": "hbm/copy/bytes:8", "real_time": 3, "bytes": NaN}]})"),
      "benchmark results 'r.json': entry 'hbm/copy/bytes:8' has counter bytes = NaN or Infinity: Google "
      "Benchmark could not compute it; run that benchmark again");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"name": "hbm/copy/bytes:8", "real_time": -Infinity}]})"),
            "benchmark results 'r.json': entry 'hbm/copy/bytes:8' has real_time NaN or Infinity; run that "
            "benchmark again");
  EXPECT_EQ(
      error_of(R"({"benchmarks": [{"name": "hbm/copy/bytes:8", "real_time": 1e400}]})")
          .rfind("benchmark results 'r.json' hold a number out of range (number overflow parsing '1e400')",
                 0),
      0u);
}

TEST(BenchResults, ANonFiniteNumberInAnAggregateTheFitDoesNotReadIsHarmless) {
  // Three repetitions of a counter that is zero each time: its coefficient of variation is 0/0.
  // Strings that merely spell the words stay as they are.
  const char* text = R"({"benchmarks": [
      {"name": "hbm/copy/bytes:1048576", "run_type": "aggregate", "aggregate_name": "median",
       "real_time": 2, "time_unit": "us", "bytes": 2097152, "label": "NaN and -Infinity"},
      {"name": "hbm/copy/bytes:1048576", "run_type": "aggregate", "aggregate_name": "cv",
       "real_time": 0.01, "time_unit": "us", "bytes": -NaN, "performance_state": NaN}]})";
  BenchResults results;
  ASSERT_TRUE(add_bench_results(text, "r.json", results).ok());
  ASSERT_EQ(results.bandwidth.size(), 1u);
}

TEST(BenchResults, SkipsEntriesThatReportedAnErrorAndSaysSo) {
  const char* text = R"({"benchmarks": [
      {"name": "gemm/fp8/m:64/n:64/k:64", "error_occurred": true, "error_message": "no FP8 on this GPU"},
      {"name": "gemm/bf16/m:64/n:64/k:64", "real_time": 2, "time_unit": "us"}]})";
  BenchResults r;
  ASSERT_TRUE(add_bench_results(text, "r.json", r).ok());
  EXPECT_EQ(r.gemm.size(), 1u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(
      r.notes[0],
      "skipped 'gemm/fp8/m:64/n:64/k:64' in r.json: the benchmark reported an error (no FP8 on this GPU)");
}

}  // namespace
}  // namespace pipescope::calibrate
