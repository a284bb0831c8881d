// HTA's figures (run_report.h, HtaFigures) on a hand-made two-step trace whose answers are worked
// out below by hand: HTA's span, idle / compute / non-compute time, the communication-computation
// overlap and the seven kernel-type regions, with the last step's GPU work left out.
#include <gtest/gtest.h>

#include "pipescope/analysis/kineto_import.h"
#include "pipescope/analysis/report_builder.h"
#include "pipescope/analysis/run_loader.h"
#include "trace_test_support.h"

namespace pipescope::analysis {
namespace {

// Step 1 is [0, 1000) us and step 2 [1000, 2000). In step 1: compute A [100, 300), the all-reduce
// [200, 500), a copy [450, 550), compute B [700, 800). In step 2: compute C [1100, 1200).
const char* const kTwoSteps = R"JSON({
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "tid": 1, "ts": 900, "dur": 50},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "tid": 1, "ts": 1000, "dur": 1000},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "ts": 100, "dur": 200, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 200, "dur": 300,
     "args": {"stream": 20}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 450, "dur": 100,
     "args": {"stream": 7, "bytes": 1024}},
    {"ph": "X", "cat": "kernel", "name": "gemm_b", "ts": 700, "dur": 100, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm_c", "ts": 1100, "dur": 100, "args": {"stream": 7}}
  ]})JSON";

TEST(HtaFigures, TwoStepsByHand) {
  trace::test::ScratchDir dir;
  ASSERT_TRUE(convert_kineto_text(kTwoSteps, "two-steps.json", dir.file("kineto-0.pst")).ok());
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto report = build_run_report(*run, {});
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->ranks.size(), 1u);
  ASSERT_TRUE(report->ranks[0].hta.has_value());
  const HtaFigures& h = *report->ranks[0].hta;
  constexpr int64_t us = 1000;
  EXPECT_FALSE(h.busy_at_last_step_start);  // idle from 800 us to the last step's start
  // The span: A's start to B's end (C is in the last step, which HTA leaves out).
  EXPECT_EQ(h.kernel_time_ns, 700 * us);
  // Busy: [100, 550) and [700, 800); compute: A and B.
  EXPECT_EQ(h.idle_time_ns, 150 * us);
  EXPECT_EQ(h.compute_time_ns, 300 * us);
  EXPECT_EQ(h.non_compute_time_ns, 250 * us);
  // Computation overlaps the all-reduce over [200, 300): 100 of its 300 us.
  ASSERT_TRUE(h.comp_comm_overlap.has_value());
  EXPECT_DOUBLE_EQ(*h.comp_comm_overlap, 1.0 / 3.0);
  const HtaFigures::KernelTypes& k = h.kernel_types;
  EXPECT_EQ(k.computation_ns, 200 * us);                // [100, 200) and [700, 800)
  EXPECT_EQ(k.computation_communication_ns, 100 * us);  // [200, 300)
  EXPECT_EQ(k.communication_ns, 150 * us);              // [300, 450)
  EXPECT_EQ(k.communication_memory_ns, 50 * us);        // [450, 500)
  EXPECT_EQ(k.memory_ns, 50 * us);                      // [500, 550)
  EXPECT_EQ(k.computation_memory_ns, 0);
  EXPECT_EQ(k.all_three_ns, 0);
  // The run's breakdown: the same regions, as shares of their 550 us.
  ASSERT_EQ(report->hta_kernel_types.size(), 5u);
  EXPECT_EQ(report->hta_kernel_types[0].kernel_type, "COMPUTATION");
  EXPECT_NEAR(report->hta_kernel_types[0].percentage, 100.0 * 200 / 550, 1e-9);
  EXPECT_EQ(report->hta_kernel_types[1].kernel_type, "COMMUNICATION");
  // One rank: its own rows are the run's.
  const std::vector<HtaKernelTypeShare> own = hta_kernel_type_shares(k);
  ASSERT_EQ(own.size(), report->hta_kernel_types.size());
  for (size_t i = 0; i < own.size(); ++i) {
    EXPECT_EQ(own[i].kernel_type, report->hta_kernel_types[i].kernel_type);
    EXPECT_EQ(own[i].sum_ns, report->hta_kernel_types[i].sum_ns);
  }
  EXPECT_EQ(own.back().kernel_type, "COMMUNICATION overlapping MEMORY");  // 50 us, after MEMORY's (stable)
}

// GPU work that started before the last step and runs into it (the GPU behind the host): HTA cuts
// by launch, these figures by start, and they say so.
TEST(HtaFigures, AGpuBusyAcrossTheLastStepStartIsFlagged) {
  std::string busy = kTwoSteps;
  const std::string b = R"JSON({"ph": "X", "cat": "kernel", "name": "gemm_b", "ts": 700, "dur": 100,)JSON";
  ASSERT_NE(busy.find(b), std::string::npos);
  busy.replace(busy.find(b), b.size(),
               R"JSON({"ph": "X", "cat": "kernel", "name": "gemm_b", "ts": 700, "dur": 400,)JSON");
  trace::test::ScratchDir dir;
  ASSERT_TRUE(convert_kineto_text(busy, "busy.json", dir.file("kineto-0.pst")).ok());
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto report = build_run_report(*run, {});
  ASSERT_TRUE(report.ok());
  ASSERT_TRUE(report->ranks[0].hta.has_value());
  EXPECT_TRUE(report->ranks[0].hta->busy_at_last_step_start);
  EXPECT_EQ(report->ranks[0].hta->kernel_time_ns, 1000 * 1000);  // A's start to B's end at 1,100 us
  bool warned = false;
  for (const std::string& w : report->warnings)
    warned |= w.find("still busy when the last step began") != std::string::npos;
  EXPECT_TRUE(warned);
}

// With the launches in the trace, the cut is HTA's own: by launch. C was launched at 950 us, in
// the first step, and runs at 1,100 us: it counts; D, launched in the last step, does not.
TEST(HtaFigures, WithLaunchesInTheTraceTheLastStepIsCutByLaunchAsHtaCutsIt) {
  std::string launched = kTwoSteps;
  const std::string c =
      R"JSON({"ph": "X", "cat": "kernel", "name": "gemm_c", "ts": 1100, "dur": 100, "args": {"stream": 7}})JSON";
  ASSERT_NE(launched.find(c), std::string::npos);
  launched.replace(
      launched.find(c), c.size(),
      R"JSON({"ph": "X", "cat": "kernel", "name": "gemm_c", "ts": 1100, "dur": 100, "args": {"stream": 7, "correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "gemm_d", "ts": 1300, "dur": 100, "args": {"stream": 7, "correlation": 4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 90, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 95, "dur": 5, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 950, "dur": 5, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 1050, "dur": 5, "args": {"correlation": 4}})JSON");
  // A and B get launches too; the copy and the all-reduce none (HTA leaves such work out).
  for (const auto& [name, id] :
       {std::pair{"\"gemm_a\", \"ts\": 100, \"dur\": 200, \"args\": {\"stream\": 7", "1"},
        std::pair{"\"gemm_b\", \"ts\": 700, \"dur\": 100, \"args\": {\"stream\": 7", "2"}}) {
    const std::string from = name;
    ASSERT_NE(launched.find(from), std::string::npos) << from;
    launched.replace(launched.find(from), from.size(), from + ", \"correlation\": " + id);
  }
  trace::test::ScratchDir dir;
  ASSERT_TRUE(convert_kineto_text(launched, "launched.json", dir.file("kineto-0.pst")).ok());
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto report = build_run_report(*run, {});
  ASSERT_TRUE(report.ok());
  const HtaFigures& h = *report->ranks[0].hta;
  constexpr int64_t us = 1000;
  EXPECT_EQ(h.kernel_time_ns, 1100 * us);  // A's start (100) to C's end (1,200)
  EXPECT_EQ(h.compute_time_ns, 400 * us);  // A, B and C
  EXPECT_EQ(h.idle_time_ns, 700 * us);
  EXPECT_FALSE(h.comp_comm_overlap.has_value());  // the all-reduce had no launch: left out
  EXPECT_FALSE(h.busy_at_last_step_start);
}

// One step: HTA has no last step to leave out, and neither do these figures.
TEST(HtaFigures, ASingleStepKeepsAllItsWork) {
  const std::string step2 =
      R"JSON({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "tid": 1, "ts": 1000, "dur": 1000},)JSON";
  std::string one = kTwoSteps;
  ASSERT_NE(one.find(step2), std::string::npos);
  one.erase(one.find(step2), step2.size());
  trace::test::ScratchDir dir;
  ASSERT_TRUE(convert_kineto_text(one, "one-step.json", dir.file("kineto-0.pst")).ok());
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto report = build_run_report(*run, {});
  ASSERT_TRUE(report.ok());
  const HtaFigures& h = *report->ranks[0].hta;
  EXPECT_EQ(h.kernel_time_ns, 1100 * 1000);  // A's start to C's end
  EXPECT_EQ(h.compute_time_ns, 400 * 1000);
}

}  // namespace
}  // namespace pipescope::analysis
