// The training losses from the suite's results: the benchmark families read, and each fit on
// synthetic samples with a known answer.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/calibrate/losses_fit.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::calibrate {
namespace {

constexpr double kFlops8192 = 2.0 * 8192 * 8192 * 8192;

SustainedSample sustained(double burst, double settled, double seconds = 90) {
  SustainedSample s;
  s.id = {"sustained/gemm/m:8192/n:8192/k:8192", "s.json"};
  s.m = s.n = s.k = 8192;
  s.burst_flops_per_s = burst;
  s.sustained_flops_per_s = settled;
  s.seconds = seconds;
  s.sustained_sm_clock_mhz = 1485;
  s.burst_sm_clock_mhz = 1980;
  s.sustained_power_w = 690;
  s.power_limit_w = 700;
  s.clock_event_reasons = "sw_power_cap";
  return s;
}

GemmSample table_entry(double flops_per_s, std::string dtype = "bf16") {
  return {{"gemm/bf16/m:8192/n:8192/k:8192", "s.json"},
          std::move(dtype),
          8192,
          8192,
          8192,
          kFlops8192 / flops_per_s};
}

planner::CalibrationProfile flat_profile(double efficiency) {
  planner::CalibrationProfile p;
  p.gemm = {{1024, 1024, 1024, efficiency, "test"}, {16384, 16384, 16384, efficiency, "test"}};
  return p;
}

TEST(FitSustained, IsTheSettledRateOverTheTablesForTheSameShape) {
  std::vector<std::string> notes;
  const auto fit =
      fit_sustained({sustained(750e12, 600e12)}, {table_entry(700e12), table_entry(650e12, "fp16")},
                    flat_profile(0.1), 1e15, "run", notes);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->value.value, 600.0 / 700.0, 1e-9);  // the bf16 table entry, not fp16, not the profile
  EXPECT_NE(fit->value.source.find("in the same results"), std::string::npos) << fit->value.source;
  EXPECT_NE(fit->value.source.find("sw_power_cap"), std::string::npos) << fit->value.source;
  EXPECT_TRUE(notes.empty());
}

TEST(FitSustained, WithoutTheShapeInTheResultsTakesTheProfilesTable) {
  std::vector<std::string> notes;
  // The profile's table says 0.8 of a 1 PFLOP/s peak at 8192^3.
  const auto fit = fit_sustained({sustained(900e12, 720e12)}, {}, flat_profile(0.8), 1e15, "run", notes);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->value.value, 0.9, 1e-9);
  EXPECT_NE(fit->value.source.find("the profile's GEMM table"), std::string::npos) << fit->value.source;
}

TEST(FitSustained, FasterThanTheTableIsHeldAtOneAndSaidSo) {
  std::vector<std::string> notes;
  const auto fit = fit_sustained({sustained(750e12, 700e12)}, {table_entry(650e12)}, flat_profile(0.5), 1e15,
                                 "run", notes);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->value.value, 1.0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("held at 1"), std::string::npos) << notes[0];
}

TEST(FitSustained, TheLongestRunStandsAndNothingMeasuredIsEmpty) {
  std::vector<std::string> notes;
  EXPECT_FALSE(fit_sustained({}, {table_entry(700e12)}, flat_profile(0.5), 1e15, "run", notes).has_value());
  const auto fit = fit_sustained({sustained(750e12, 560e12, 120), sustained(750e12, 690e12, 20)},
                                 {table_entry(700e12)}, flat_profile(0.5), 1e15, "run", notes);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->value.value, 0.8, 1e-9);
}

GemmLayoutSample layout(int64_t m, int64_t n, int64_t k, std::string pass, double seconds) {
  return {{"gemm_layout/bf16/m:" + std::to_string(m), "l.json"}, m, n, k, std::move(pass), seconds};
}

TEST(FitLayouts, GeometricMeanOfEachPassOverTheForwardLayoutOfTheSameShape) {
  std::vector<std::string> notes;
  const LayoutFits fits = fit_layouts(
      {layout(1, 2, 3, "forward", 1.0), layout(1, 2, 3, "dgrad", 1.21), layout(4, 5, 6, "forward", 2.0),
       layout(4, 5, 6, "dgrad", 2.0), layout(4, 5, 6, "wgrad", 1.8), layout(7, 8, 9, "wgrad", 5.0)},
      "run", notes);
  ASSERT_TRUE(fits.dgrad.has_value());
  EXPECT_NEAR(fits.dgrad->value.value, 1.1, 1e-9);  // sqrt(1.21 x 1.0)
  ASSERT_TRUE(fits.wgrad.has_value());
  EXPECT_NEAR(fits.wgrad->value.value, 0.9, 1e-9);  // the unpaired 7x8x9 is left out
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("1 wgrad GEMM shapes have no forward-layout measurement"), std::string::npos)
      << notes[0];
  EXPECT_EQ(fits.dgrad->quality.points, 2u);
}

TEST(FitLayouts, NothingMeasuredIsEmpty) {
  std::vector<std::string> notes;
  const LayoutFits fits = fit_layouts({layout(1, 2, 3, "forward", 1.0)}, "run", notes);
  EXPECT_FALSE(fits.dgrad.has_value());
  EXPECT_FALSE(fits.wgrad.has_value());
}

InterferenceSample beside(std::string work, int sms, double alone, double beside_s) {
  InterferenceSample s;
  s.id = {"interference/" + work, "i.json"};
  s.work = std::move(work);
  s.sms = sms;
  s.alone_s = alone;
  s.beside_s = beside_s;
  return s;
}

TEST(FitInterference, MedianSlowdownBesideSixteenHeldSms) {
  const std::vector<InterferenceSample> samples = {
      beside("gemm", 8, 1.0, 1.1),  beside("gemm", 16, 1.0, 1.3), beside("gemm", 16, 2.0, 2.4),
      beside("gemm", 16, 1.0, 1.5), beside("gemm", 32, 1.0, 1.9), beside("memory", 16, 1.0, 1.04)};
  const auto gemm = fit_interference(samples, "gemm", "run");
  ASSERT_TRUE(gemm.has_value());
  EXPECT_NEAR(gemm->value.value, 0.3, 1e-9);  // the median of 0.3, 0.2 and 0.5
  EXPECT_NE(gemm->summary.find("8 SMs 0.1, 16 SMs 0.3, 32 SMs 0.9"), std::string::npos) << gemm->summary;
  const auto memory = fit_interference(samples, "memory", "run");
  ASSERT_TRUE(memory.has_value());
  EXPECT_NEAR(memory->value.value, 0.04, 1e-9);
}

TEST(FitInterference, TakesTheNearestSmCountWithoutSixteenAndNeverSpeedsUp) {
  const auto fit =
      fit_interference({beside("gemm", 8, 1.0, 1.2), beside("gemm", 32, 1.0, 1.6)}, "gemm", "run");
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->value.value, 0.2, 1e-9);  // 8 and 32 are both 8 away: the smaller wins
  const auto faster = fit_interference({beside("gemm", 16, 1.0, 0.9)}, "gemm", "run");
  ASSERT_TRUE(faster.has_value());
  EXPECT_EQ(faster->value.value, 0.0);
  EXPECT_FALSE(fit_interference({beside("memory", 16, 1.0, 1.1)}, "gemm", "run").has_value());
}

TEST(BenchResults, ReadsTheLossFamiliesAndAOneRunBenchmarkBesideMedians) {
  const std::string text = R"({
    "context": {"gpu_name": "NVIDIA H200"},
    "benchmarks": [
      {"name": "gemm_layout/bf16/m:4096/n:1024/k:8192/pass:dgrad/manual_time_median",
       "run_name": "gemm_layout/bf16/m:4096/n:1024/k:8192/pass:dgrad/manual_time", "run_type": "aggregate",
       "aggregate_name": "median", "real_time": 99.7, "time_unit": "us"},
      {"name": "gemm_layout/bf16/m:4096/n:1024/k:8192/pass:dgrad/manual_time",
       "run_name": "gemm_layout/bf16/m:4096/n:1024/k:8192/pass:dgrad/manual_time", "run_type": "iteration",
       "real_time": 120.0, "time_unit": "us"},
      {"name": "interference/gemm/m:8192/n:8192/k:8192/sms:16/pause_ns:40000/iterations:3/manual_time_median",
       "run_name": "interference/gemm/m:8192/n:8192/k:8192/sms:16/pause_ns:40000/iterations:3/manual_time",
       "run_type": "aggregate", "aggregate_name": "median", "real_time": 2078, "time_unit": "us",
       "alone_s": 0.0015, "beside_s": 0.002, "background_bytes_per_s": 3e11},
      {"name": "sustained/gemm/m:8192/n:8192/k:8192/iterations:1/repeats:1/manual_time",
       "run_name": "sustained/gemm/m:8192/n:8192/k:8192/iterations:1/repeats:1/manual_time",
       "run_type": "iteration", "real_time": 1636, "time_unit": "us", "burst_flops_per_s": 7.4e14,
       "sustained_flops_per_s": 6.7e14, "seconds": 90.8, "sustained_sm_clock_mhz": 1485,
       "label": "clock_event_reasons sw_power_cap"}
    ]})";
  BenchResults r;
  const Status s = add_bench_results(text, "losses.json", r);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(r.gemm_layouts.size(), 1u);  // the median, not the repetition it summarises
  EXPECT_EQ(r.gemm_layouts[0].pass, "dgrad");
  EXPECT_NEAR(r.gemm_layouts[0].seconds, 99.7e-6, 1e-12);
  ASSERT_EQ(r.interference.size(), 1u);
  EXPECT_EQ(r.interference[0].sms, 16);
  EXPECT_EQ(r.interference[0].pause_ns, 40000);
  EXPECT_NEAR(r.interference[0].slowdown(), 1.0 / 3.0, 1e-9);
  ASSERT_EQ(r.sustained.size(), 1u);  // a benchmark with no aggregate stands for itself
  EXPECT_EQ(r.sustained[0].clock_event_reasons, "sw_power_cap");
  EXPECT_NEAR(r.sustained[0].sustained_flops_per_s, 6.7e14, 1);
  EXPECT_FALSE(r.empty());
}

TEST(BenchResults, RefusesALayoutWithoutItsPassAndInterferenceWithoutItsCounters) {
  for (const std::string entry :
       {R"({"name": "gemm_layout/bf16/m:1/n:2/k:3", "real_time": 1, "time_unit": "us"})",
        R"({"name": "interference/gemm/m:1/n:2/k:3/sms:16", "real_time": 1, "time_unit": "us"})",
        R"({"name": "interference/gemm/m:1/n:2/k:3/sms:0", "real_time": 1, "time_unit": "us",
            "alone_s": 1, "beside_s": 1, "background_bytes_per_s": 1})",
        R"({"name": "sustained/gemm/m:8192/n:8192/k:8192", "real_time": 1, "time_unit": "us"})"}) {
    BenchResults r;
    const Status s = add_bench_results(R"({"benchmarks": [)" + entry + "]}", "bad.json", r);
    ASSERT_FALSE(s.ok()) << entry;
    EXPECT_NE(s.error().message.find("bad.json"), std::string::npos) << s.error().message;
  }
}

TEST(LaunchGaps, ReadSaidPerKernelAndTheGraphsEmptyKernelIsTheGap) {
  const std::string text = R"({"benchmarks": [
    {"name": "launch/gap/bytes:0/iterations:5/manual_time", "run_type": "iteration", "real_time": 4.5,
     "time_unit": "us", "stream_s_per_kernel": 4.5e-6, "graph_s_per_kernel": 1.5e-6, "host_s_per_launch": 4.2e-6},
    {"name": "launch/gap/bytes:1048576/iterations:5/manual_time", "run_type": "iteration", "real_time": 5,
     "time_unit": "us", "stream_s_per_kernel": 5e-6, "graph_s_per_kernel": 4e-6, "host_s_per_launch": 4.1e-6}]})";
  BenchResults r;
  const Status s = add_bench_results(text, "launch.json", r);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(r.launch_gaps.size(), 2u);
  EXPECT_NEAR(r.launch_gaps[0].gap_s(), 3e-6, 1e-12);
  const auto summary = launch_gaps_summary(r.launch_gaps);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(*summary,
            "empty kernel: 4.5 us a kernel launched one at a time, 1.5 us from a graph (the GPU idles 3 us a "
            "kernel), host 4.2 us a launch; copy of 1 MiB: 5 us a kernel launched one at a time, 4 us from a "
            "graph (the GPU idles 1 us a kernel), host 4.1 us a launch");
  EXPECT_FALSE(launch_gaps_summary({}).has_value());
  // The profile's figure: the empty kernel's time from a graph, 1.5 us, whatever the copies took.
  const auto fit = fit_launch_gap(r.launch_gaps, "suite on X");
  ASSERT_TRUE(fit.has_value());
  EXPECT_DOUBLE_EQ(fit->value.value, 1.5e-6);
  EXPECT_EQ(
      fit->value.source,
      "measured: an empty kernel replayed 1,000 at a time from a CUDA graph took 1.5 us a kernel (launched "
      "one at a time: 4.5 us, the host's 4.2 us a launch), suite on X");
  EXPECT_EQ(fit->summary, *summary);
  // Copies alone say nothing of the gap: their graph time is mostly the copy.
  EXPECT_FALSE(fit_launch_gap({r.launch_gaps[1]}, "x").has_value());
  BenchResults bad;
  EXPECT_FALSE(add_bench_results(R"({"benchmarks": [{"name": "launch/gap/bytes:0", "real_time": 1,
      "time_unit": "us"}]})",
                                 "bad.json", bad)
                   .ok());
}

EagerKernelSample eager_sample(const std::string& op, double bytes, double fixed_s, double bytes_per_s) {
  EagerKernelSample s;
  s.id = {"eager/" + op + "/elements:" + std::to_string(static_cast<int64_t>(bytes)), "eager.json"};
  s.op = op;
  s.elements = static_cast<int64_t>(bytes);
  s.bytes = bytes;
  s.seconds = fixed_s + bytes / bytes_per_s;
  return s;
}

std::vector<EagerKernelSample> eager_sweep(const std::string& op, double fixed_s, double bytes_per_s) {
  std::vector<EagerKernelSample> out;
  for (double bytes = 1 << 20; bytes <= (1 << 28); bytes *= 4)
    out.push_back(eager_sample(op, bytes, fixed_s, bytes_per_s));
  return out;
}

TEST(EagerKernelFits, TheMedianOpsFixedTimeLessTheGapAndTheUnvectorizedBandwidth) {
  std::vector<EagerKernelSample> samples;
  for (const auto& [op, fixed, bandwidth] : {std::tuple{"mul_bf16", 2.0e-6, 4.0e12},
                                             {"add_bf16", 2.1e-6, 4.0e12},
                                             {"cast_bf16_fp32", 2.3e-6, 2.0e12},
                                             {"transpose_bf16", 2.2e-6, 1.0e12}}) {
    const auto sweep = eager_sweep(op, fixed, bandwidth);
    samples.insert(samples.end(), sweep.begin(), sweep.end());
  }
  std::vector<std::string> notes;
  const EagerFits fits = fit_eager_kernels(samples, 0.5e-6, 4.0e12, "suite on X", notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  // Fixed times 2.0, 2.1, 2.2, 2.3 us: the median 2.15 less the graph's 0.5 us gap.
  ASSERT_TRUE(fits.kernel_fixed.has_value());
  EXPECT_NEAR(fits.kernel_fixed->value.value, 1.65e-6, 1e-12);
  // Unvectorized: the cast at 2 TB/s and the transpose at 1 TB/s, the median 1.5 of 4 TB/s.
  ASSERT_TRUE(fits.unvectorized.has_value());
  EXPECT_NEAR(fits.unvectorized->value.value, 0.375, 1e-9);
  EXPECT_NE(
      fits.unvectorized->value.source.find("the median unvectorized op (casts, layout copies) at 1500 GB/s"),
      std::string::npos)
      << fits.unvectorized->value.source;
  EXPECT_NE(fits.kernel_fixed->value.source.find("mul_bf16 2 us + 4000 GB/s"), std::string::npos)
      << fits.kernel_fixed->value.source;
  EXPECT_EQ(fits.kernel_fixed->quality.points, samples.size());

  // Without an unvectorized op there is no fraction; without samples, nothing.
  const EagerFits vectorized_only =
      fit_eager_kernels(eager_sweep("mul_bf16", 2e-6, 4e12), 0, 4e12, "x", notes);
  EXPECT_TRUE(vectorized_only.kernel_fixed.has_value());
  EXPECT_FALSE(vectorized_only.unvectorized.has_value());
  const EagerFits none = fit_eager_kernels({}, 0, 4e12, "x", notes);
  EXPECT_FALSE(none.kernel_fixed.has_value() || none.unvectorized.has_value());
}

TEST(EagerKernelFits, HeldAtTheirBoundsAndSaidSo) {
  std::vector<std::string> notes;
  // A cast faster than the memory-bound bandwidth, and kernels quicker than the launch gap.
  const EagerFits fits = fit_eager_kernels(eager_sweep("cast_bf16_fp32", 1e-6, 5e12), 2e-6, 4e12, "x", notes);
  ASSERT_TRUE(fits.kernel_fixed && fits.unvectorized);
  EXPECT_EQ(fits.kernel_fixed->value.value, 0);
  EXPECT_EQ(fits.unvectorized->value.value, 1);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("less fixed time (1 us) than the launch gap (2 us)"), std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("ran faster than the memory-bound bandwidth"), std::string::npos) << notes[1];
  // One size says nothing of a line: that op is left out, and said so.
  notes.clear();
  const EagerFits one =
      fit_eager_kernels({eager_sample("mul_bf16", 1 << 20, 2e-6, 4e12)}, 0, 4e12, "x", notes);
  EXPECT_FALSE(one.kernel_fixed.has_value());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("eager/mul_bf16 left out"), std::string::npos) << notes[0];
}

TEST(BenchResults, ReadsPyTorchsKernelsAndRefusesOneWithoutItsSizeOrBytes) {
  const std::string text = R"({"benchmarks": [
    {"name": "eager/cast_bf16_fp32/elements:1048576/manual_time", "run_type": "iteration", "real_time": 5.08,
     "time_unit": "us", "bytes": 6291456},
    {"name": "eager/mul_bf16/elements:1048576/manual_time", "run_type": "iteration", "real_time": 3.33,
     "time_unit": "us", "bytes": 6291456}]})";
  BenchResults r;
  const Status s = add_bench_results(text, "eager.json", r);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(r.eager_kernels.size(), 2u);
  EXPECT_EQ(r.eager_kernels[0].op, "cast_bf16_fp32");
  EXPECT_TRUE(r.eager_kernels[0].unvectorized());
  EXPECT_FALSE(r.eager_kernels[1].unvectorized());
  EXPECT_EQ(r.eager_kernels[0].elements, 1048576);
  EXPECT_DOUBLE_EQ(r.eager_kernels[0].bytes, 6291456);
  EXPECT_NEAR(r.eager_kernels[0].seconds, 5.08e-6, 1e-15);
  EXPECT_FALSE(r.empty());
  for (const char* bad :
       {R"({"benchmarks": [{"name": "eager/mul_bf16/manual_time", "real_time": 1, "time_unit": "us",
                              "bytes": 8}]})",
        R"({"benchmarks": [{"name": "eager/mul_bf16/elements:4", "real_time": 1, "time_unit": "us"}]})",
        R"({"benchmarks": [{"name": "eager/mul_bf16/elements:4", "real_time": 1, "time_unit": "us",
                              "bytes": 0}]})"}) {
    BenchResults into;
    EXPECT_FALSE(add_bench_results(bad, "bad.json", into).ok()) << bad;
  }
}

// 128 score matrices of 2048 x 2048 (bf16), head width d: one pass timed as its batched GEMMs at a
// flat table of 0.5 on a 1e15 FLOP/s GPU plus its score traffic at `fraction` of 2e12 B/s.
UnfusedAttentionSample unfused_sample(bool backward, bool dropout, int64_t head_dim, double fraction) {
  UnfusedAttentionSample u;
  u.id = {"attention_unfused/bf16/matrices:128/seq:2048/head_dim:" + std::to_string(head_dim) +
              (dropout ? "/dropout_percent:10" : "/dropout_percent:0") +
              (backward ? "/pass:backward" : "/pass:forward"),
          "u.json"};
  u.matrices = 128;
  u.seq = 2048;
  u.head_dim = head_dim;
  u.dropout = dropout;
  u.backward = backward;
  const double gemms =
      (backward ? 4 : 2) * 2.0 * 128 * 2048 * 2048 * static_cast<double>(head_dim) / (1e15 * 0.5);
  const double scores = ((backward ? 7 : 4) + (dropout ? 2.5 : 0)) * 128.0 * 2048 * 2048 * 2;
  u.seconds = gemms + scores / (2e12 * fraction);
  return u;
}

TEST(UnfusedAttentionFits, EachPassLessItsGemmsIsItsScoreTrafficAtTheFraction) {
  std::vector<UnfusedAttentionSample> samples;
  for (bool dropout : {false, true}) {
    for (int64_t head_dim : {64, 128}) {
      samples.push_back(unfused_sample(false, dropout, head_dim, 0.9));
      samples.push_back(unfused_sample(true, dropout, head_dim, 0.8));
    }
  }
  std::vector<std::string> notes;
  const UnfusedAttentionFits fits = fit_unfused_attention(samples, flat_profile(0.5), 1e15, 2e12, "x", notes);
  ASSERT_TRUE(fits.forward.has_value() && fits.backward.has_value());
  EXPECT_NEAR(fits.forward->value.value, 0.9, 1e-12);
  EXPECT_NEAR(fits.backward->value.value, 0.8, 1e-12);
  EXPECT_EQ(fits.forward->value.source.rfind("measured: ", 0), 0u) << fits.forward->value.source;
  EXPECT_NE(fits.backward->summary.find("4 timings"), std::string::npos) << fits.backward->summary;
  EXPECT_LT(fits.forward->quality.max_relative_error, 1e-9);
  EXPECT_TRUE(notes.empty());
  // The median over the timings: a third one slower moves it to the middle one.
  samples.push_back(unfused_sample(false, false, 64, 0.7));
  samples.push_back(unfused_sample(false, true, 64, 0.7));
  samples.push_back(unfused_sample(false, true, 128, 0.7));
  EXPECT_NEAR(fit_unfused_attention(samples, flat_profile(0.5), 1e15, 2e12, "x", notes).forward->value.value,
              0.9, 1e-12);
}

TEST(UnfusedAttentionFits, ATimingItsGemmsAloneExceedIsLeftOutAndNothingMeasuredIsEmpty) {
  UnfusedAttentionSample fast = unfused_sample(false, false, 64, 0.9);
  fast.seconds = 1e-6;
  std::vector<std::string> notes;
  const UnfusedAttentionFits fits = fit_unfused_attention({fast, unfused_sample(true, false, 64, 0.8)},
                                                          flat_profile(0.5), 1e15, 2e12, "x", notes);
  EXPECT_FALSE(fits.forward.has_value());
  ASSERT_TRUE(fits.backward.has_value());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("no more than its batched GEMMs"), std::string::npos) << notes[0];
  const UnfusedAttentionFits none = fit_unfused_attention({}, flat_profile(0.5), 1e15, 2e12, "x", notes);
  EXPECT_FALSE(none.forward.has_value() || none.backward.has_value());
}

TEST(BenchResults, ReadsUnfusedAttentionAndRefusesOneWithoutItsPassOrShape) {
  const std::string text = R"({"benchmarks": [
    {"name": "attention_unfused/bf16/matrices:384/seq:2048/head_dim:96/dropout_percent:10/pass:backward/manual_time",
     "run_type": "iteration", "real_time": 12.5, "time_unit": "ms"},
    {"name": "attention_unfused/fp16/matrices:384/seq:2048/head_dim:96/dropout_percent:0/pass:forward/manual_time",
     "run_type": "iteration", "real_time": 4.0, "time_unit": "ms"}]})";
  BenchResults r;
  const Status s = add_bench_results(text, "attention_unfused.json", r);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(r.unfused_attention.size(), 1u);  // fp16 is skipped with a note
  const UnfusedAttentionSample& u = r.unfused_attention[0];
  EXPECT_EQ(u.matrices, 384);
  EXPECT_EQ(u.seq, 2048);
  EXPECT_EQ(u.head_dim, 96);
  EXPECT_TRUE(u.dropout);
  EXPECT_TRUE(u.backward);
  EXPECT_NEAR(u.seconds, 12.5e-3, 1e-15);
  EXPECT_FALSE(r.empty());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("priced for bf16"), std::string::npos) << r.notes.back();
  for (
      const char* bad : {
          R"({"benchmarks": [{"name": "attention_unfused/bf16/matrices:8/seq:64/head_dim:64/dropout_percent:0",
                               "real_time": 1, "time_unit": "ms"}]})",
          R"({"benchmarks": [{"name": "attention_unfused/bf16/seq:64/head_dim:64/dropout_percent:0/pass:forward",
                               "real_time": 1, "time_unit": "ms"}]})",
          R"({"benchmarks": [{"name": "attention_unfused/bf16/matrices:8/seq:0/head_dim:64/dropout_percent:0/pass:forward",
                               "real_time": 1, "time_unit": "ms"}]})"}) {
    BenchResults into;
    EXPECT_FALSE(add_bench_results(bad, "bad.json", into).ok()) << bad;
  }
}

}  // namespace
}  // namespace pipescope::calibrate
