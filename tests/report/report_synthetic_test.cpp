// The report on simulated runs whose answers are known by construction (benches/support/
// synthetic_run.h): layout and coordinates, clock offsets, 1F1B bubble and memory per stage
// (from NVTX and from the p2p pattern), p2p wait, step time, NCCL bandwidths, the busy series,
// hierarchical ZeRO, planned versus measured. Failure views: report_failures_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "pipescope/trace/trace_writer.h"
#include "synthetic_report.h"

namespace pipescope::analysis {
namespace {

using synthetic::SyntheticRunSpec;
using synthetic::SyntheticRunTruth;
using trace::test::ScratchDir;

using testing::report_of;

TEST(ReportOnSyntheticRun, InfersThe3dLayoutAndEveryRanksCoordinates) {
  ScratchDir dir;
  const auto [truth, report] = report_of(SyntheticRunSpec{}, dir);
  EXPECT_EQ(report.layout.source, "inferred");
  EXPECT_EQ(report.layout.tp, 2);
  EXPECT_EQ(report.layout.pp, 4);
  EXPECT_EQ(report.layout.dp, 2);
  EXPECT_EQ(report.layout.zero_shard, 1);
  ASSERT_EQ(report.ranks.size(), 16u);
  for (const RankReport& r : report.ranks) {
    EXPECT_EQ(r.stage, truth.stage[static_cast<size_t>(r.rank)]) << r.rank;
    EXPECT_EQ(r.tp_rank, truth.tp_rank[static_cast<size_t>(r.rank)]) << r.rank;
    EXPECT_EQ(r.dp_rank, truth.dp_rank[static_cast<size_t>(r.rank)]) << r.rank;
  }
  EXPECT_TRUE(report.stragglers.empty());
  EXPECT_FALSE(report.hang.suspected);
}

TEST(ReportOnSyntheticRun, RecoversClockOffsetsOfMillisecondsToTheNanosecond) {
  // Every rank's first record is at the same true time; offsets up to +-5 ms hide that.
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.seed = 17;
  const auto [truth, report] = report_of(spec, dir);
  EXPECT_EQ(report.clock.source, "nccl kernels");
  EXPECT_TRUE(report.clock.unaligned_ranks.empty());
  ASSERT_TRUE(report.clock.residual_p99_ns.has_value());
  EXPECT_LT(*report.clock.residual_p99_ns, 2000);
  for (const RankReport& r : report.ranks) EXPECT_LE(std::abs(r.first_event_ns), 2000) << r.rank;
}

TEST(ReportOnSyntheticRun, BubbleAndActivationMemoryPerStageMatchThe1F1BSchedule) {
  ScratchDir dir;
  const auto [truth, report] = report_of(SyntheticRunSpec{}, dir);
  ASSERT_EQ(report.stages.size(), 4u);
  for (const StageReport& s : report.stages) {
    const auto k = static_cast<size_t>(s.stage);
    EXPECT_EQ(s.source, "nvtx");
    ASSERT_TRUE(s.bubble_fraction.has_value()) << s.stage;
    EXPECT_NEAR(*s.bubble_fraction, truth.bubble_fraction[k], 1e-3) << s.stage;
    EXPECT_EQ(s.peak_activation_bytes, truth.peak_activation_bytes[k]) << s.stage;
    EXPECT_EQ(s.forward_mean_ns, 2'000'000);
    EXPECT_EQ(s.backward_mean_ns, 4'000'000);
    EXPECT_EQ(s.warmup_ns, truth.warmup_ns[k]) << s.stage;
    EXPECT_EQ(s.cooldown_ns, truth.cooldown_ns[k]) << s.stage;
    // Steady is the rest of the span, which the bubble gives: 8 x 6 ms of compute / (1 - bubble).
    const double span = 8 * 6e6 / (1 - truth.bubble_fraction[k]);
    EXPECT_NEAR(static_cast<double>(s.steady_ns.value_or(0)),
                span - static_cast<double>(truth.warmup_ns[k] + truth.cooldown_ns[k]), 1e3)
        << s.stage;
  }
  // 1F1B with 4 stages and 8 micro-batches: stage 0 holds 4 micro-batches, the last one 1.
  EXPECT_DOUBLE_EQ(report.stages.front().activation_vs_last_stage.value_or(0), 4.0);
  for (const RankReport& r : report.ranks) {
    EXPECT_EQ(r.peak_memory_bytes, truth.peak_memory_bytes[static_cast<size_t>(r.rank)]) << r.rank;
    EXPECT_EQ(r.static_memory_bytes, 8ull << 30) << r.rank;
    EXPECT_EQ(r.memory_figure, "reserved");
  }
}

TEST(ReportOnSyntheticRun, WithoutNvtxThePipelineIsReadFromTheP2pPattern) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.nvtx = false;
  const auto [truth, report] = report_of(spec, dir);
  ASSERT_EQ(report.stages.size(), 4u);
  // 1F1B, 4 stages, 8 micro-batches of 2 + 4 ms, 50 us transfers: stage 0's span is 8 x 6 ms
  // plus the 3 gradients it waits for through the later stages, stage 3's only its own.
  EXPECT_NEAR(truth.bubble_fraction[0], 0.28, 0.01);
  EXPECT_NEAR(truth.bubble_fraction[3], 0.01, 0.01);
  for (const StageReport& s : report.stages) {
    const auto k = static_cast<size_t>(s.stage);
    EXPECT_EQ(s.source, "p2p") << s.stage;
    ASSERT_TRUE(s.bubble_fraction.has_value()) << s.stage;
    EXPECT_NEAR(*s.bubble_fraction, truth.bubble_fraction[k], 1e-3) << s.stage;
    EXPECT_EQ(s.microbatch_ns, 6'000'000) << s.stage;
    if (s.stage < 3) {
      EXPECT_EQ(s.forward_mean_ns, 2'000'000) << s.stage;
      EXPECT_EQ(s.backward_mean_ns, 4'000'000) << s.stage;
      EXPECT_EQ(s.warmup_ns, truth.warmup_ns[k]) << s.stage;
      EXPECT_EQ(s.cooldown_ns, truth.cooldown_ns[k]) << s.stage;
    } else {  // forward and backward of a micro-batch run back to back: no p2p tells them apart
      EXPECT_FALSE(s.forward_mean_ns.has_value());
      EXPECT_FALSE(s.backward_mean_ns.has_value());
      EXPECT_FALSE(s.warmup_ns.has_value());
    }
  }
  EXPECT_NE(std::find(report.findings.begin(), report.findings.end(),
                      "pipeline bubble per stage: 28% 21% 12% 1% (from the p2p pattern)"),
            report.findings.end());
  // Static memory is what was held before the first forward, found from the p2p pattern too.
  for (const RankReport& r : report.ranks) EXPECT_EQ(r.static_memory_bytes, 8ull << 30) << r.rank;
  for (const StageReport& s : report.stages)
    EXPECT_EQ(s.peak_activation_bytes, truth.peak_activation_bytes[static_cast<size_t>(s.stage)]) << s.stage;
  EXPECT_NE(std::find(report.findings.begin(), report.findings.end(),
                      "memory imbalance: stage 0 holds 4.0x the activations of stage 3 (1F1B)"),
            report.findings.end());
}

TEST(ReportOnSyntheticRun, WithoutNvtxOrGpuActivityTheBubbleIsNotMeasured) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.nvtx = false;
  spec.gpu = false;
  // Not a structured binding: clang 14 cannot capture one in the lambdas below.
  const testing::Reported reported = report_of(spec, dir);
  const SyntheticRunTruth& truth = reported.truth;
  const RunReport& report = reported.report;
  ASSERT_EQ(report.stages.size(), 4u);
  for (const StageReport& s : report.stages) {
    EXPECT_EQ(s.source, "none");
    EXPECT_FALSE(s.bubble_fraction.has_value());
    EXPECT_FALSE(s.forward_mean_ns.has_value());
  }
  auto said = [&](const std::string& start) {
    return std::any_of(report.findings.begin(), report.findings.end(),
                       [&](const std::string& f) { return f.starts_with(start); });
  };
  EXPECT_TRUE(said("pipeline bubble: not measured"));
  // Nothing marks the first forward either: the peak is known, its static part is not.
  for (const RankReport& r : report.ranks) {
    EXPECT_EQ(r.peak_memory_bytes, truth.peak_memory_bytes[static_cast<size_t>(r.rank)]) << r.rank;
    EXPECT_FALSE(r.static_memory_bytes.has_value()) << r.rank;
    EXPECT_FALSE(r.peak_activation_bytes.has_value()) << r.rank;
  }
  EXPECT_FALSE(report.stages[0].activation_vs_last_stage.has_value());
  EXPECT_TRUE(said("memory imbalance: not measured"));
}

TEST(ReportOnSyntheticRun, EveryRankHasAMemoryTimelineInEachFigureItsTraceHolds) {
  for (bool pool : {false, true}) {
    ScratchDir dir;
    SyntheticRunSpec spec;
    spec.memory_pool = pool;
    const auto [truth, report] = report_of(spec, dir);
    ASSERT_EQ(report.memory_timelines.size(), 16u) << pool;
    for (size_t k = 0; k < 16; ++k) {
      const MemoryTimeline& m = report.memory_timelines[k];
      const RankReport& r = report.ranks[k];
      EXPECT_EQ(m.rank, r.rank);
      // Tensors from a pool: the allocated figure, with the allocator's 1 GiB of workspace as
      // the reserved one beside it; else reserved alone.
      EXPECT_EQ(m.figure, pool ? "allocated" : "reserved");
      EXPECT_EQ(r.memory_figure, m.figure);
      EXPECT_EQ(m.allocated.has_value(), pool);
      ASSERT_TRUE(m.reserved.has_value());
      const Series& main = pool ? *m.allocated : *m.reserved;
      EXPECT_LE(main.values.size(), 401u);
      EXPECT_DOUBLE_EQ(*std::max_element(main.values.begin(), main.values.end()),
                       static_cast<double>(truth.peak_memory_bytes[k]));
      EXPECT_EQ(r.peak_memory_bytes, truth.peak_memory_bytes[k]);
      EXPECT_EQ(r.static_memory_bytes, 8ull << 30);
      if (pool) {
        EXPECT_DOUBLE_EQ(m.reserved->values.back(), static_cast<double>(1ull << 30));
      }
    }
  }
}

TEST(ReportOnSyntheticRun, P2pWaitPerStageIsTheTimeReceivesWaitedForTheirSender) {
  for (bool gpu : {true, false}) {  // kernels, or the blocking calls without GPU records
    ScratchDir dir;
    SyntheticRunSpec spec;
    spec.gpu = gpu;
    const auto [truth, report] = report_of(spec, dir);
    ASSERT_EQ(report.stages.size(), 4u);
    // Stage 0 waits for every gradient through three later stages; the last stage only for
    // activations; in all, clock alignment is good to a few us over a step's 16 receives.
    EXPECT_GT(truth.p2p_wait_ns[0], truth.p2p_wait_ns[3]);
    for (const StageReport& s : report.stages) {
      ASSERT_TRUE(s.p2p_wait_ns.has_value()) << "stage " << s.stage;  // NCCL was traced: measured
      EXPECT_NEAR(static_cast<double>(*s.p2p_wait_ns), static_cast<double>(truth.p2p_wait_ns[s.stage]), 20e3)
          << "stage " << s.stage << (gpu ? " kernels" : " calls");
    }
    const RankReport& first = report.ranks[0];
    EXPECT_NEAR(static_cast<double>(first.p2p_wait_ns), 3.0 * static_cast<double>(truth.p2p_wait_ns[0]),
                60e3);
    if (gpu) {
      ASSERT_TRUE(first.collective_wait_ns.has_value());
      EXPECT_EQ(first.gpu.comm_wait_ns, *first.collective_wait_ns + first.p2p_wait_ns);
    }
  }
}

TEST(ReportOnSyntheticRun, StepTimeIsTheSimulatedOne) {
  ScratchDir dir;
  const auto [truth, report] = report_of(SyntheticRunSpec{}, dir);
  EXPECT_EQ(report.steps.source, "nvtx");
  ASSERT_EQ(report.steps.count, truth.step_ns.size());
  // Each step from its start to the next one's; the last has no next start and is not timed.
  ASSERT_EQ(report.steps.step_ns.size(), truth.step_ns.size() - 1);
  for (size_t k = 0; k + 1 < truth.step_ns.size(); ++k) EXPECT_EQ(report.steps.step_ns[k], truth.step_ns[k]);
}

TEST(ReportOnSyntheticRun, GpuFiguresLeaveOutWhatRanBeforeTheFirstStep) {
  // Most of a second of kernels before training (model construction): the GPU figures are those of
  // the same run without them, over a span that starts at the first step.
  ScratchDir plain_dir, setup_dir;
  SyntheticRunSpec spec;
  const auto [plain_truth, plain] = report_of(spec, plain_dir);
  spec.setup_gpu_ns = 900'000'000;
  const auto [setup_truth, setup] = report_of(spec, setup_dir);
  ASSERT_EQ(plain.ranks.size(), setup.ranks.size());
  for (size_t i = 0; i < plain.ranks.size(); ++i) {
    const GpuBreakdown& a = plain.ranks[i].gpu;
    const GpuBreakdown& b = setup.ranks[i].gpu;
    EXPECT_FALSE(a.from_first_step);  // its GPU work starts with the first step anyway
    EXPECT_TRUE(b.from_first_step);
    EXPECT_EQ(b.compute_ns, a.compute_ns) << i;
    EXPECT_EQ(b.comm_exposed_ns, a.comm_exposed_ns) << i;
    EXPECT_EQ(b.comm_hidden_ns, a.comm_hidden_ns) << i;
    EXPECT_EQ(b.copy_only_ns, a.copy_only_ns) << i;
    // From the step's start rather than the rank's first kernel: later stages start later.
    EXPECT_GE(b.span_ns, a.span_ns) << i;
    EXPECT_LT(b.span_ns, a.span_ns + 100'000'000) << i;
    EXPECT_EQ(b.idle_ns - a.idle_ns, b.span_ns - a.span_ns) << i;
  }
}

TEST(ReportOnSyntheticRun, RangesThatTimeTheGpuAreNotTakenForTheHosts) {
  // The simulated ranges hold their kernels: no warning that they time the host, and the GPU's
  // own time a micro-batch is the ranges' 2 + 4 ms.
  ScratchDir dir;
  const auto [truth, report] = report_of(SyntheticRunSpec{}, dir);
  for (const std::string& w : report.warnings) EXPECT_EQ(w.find("host queued"), std::string::npos) << w;
  for (const StageReport& s : report.stages) {
    ASSERT_TRUE(s.gpu_ns_per_microbatch.has_value()) << s.stage;
    EXPECT_NEAR(static_cast<double>(*s.gpu_ns_per_microbatch), 6e6, 1e3) << s.stage;
  }
}

TEST(ReportOnSyntheticRun, NvtxNamesOutsideTheConventionsAreReadWithTheOverrides) {
  // NeMo-like names none of docs/design.md's default patterns matches.
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.step_range = "iter_boundary";
  spec.forward_range = "fprop";
  spec.backward_range = "bprop";
  auto truth = synthetic::write_synthetic_run(spec, dir.path());
  ASSERT_TRUE(truth.ok()) << truth.error().message;
  auto plain = load_run(dir.path(), {});
  ASSERT_TRUE(plain.ok());
  const auto unseen = build_run_report(*plain, {});
  ASSERT_TRUE(unseen.ok());
  EXPECT_EQ(unseen->steps.source, "collectives");
  EXPECT_EQ(unseen->stages[0].source, "p2p");
  LoadOptions options;
  options.scan.nvtx.step = "^iter_boundary$";
  options.scan.nvtx.forward = "^fprop$";
  options.scan.nvtx.backward = "^bprop$";
  auto run = load_run(dir.path(), options);
  ASSERT_TRUE(run.ok());
  const auto seen = build_run_report(*run, {});
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->steps.source, "nvtx");
  ASSERT_EQ(seen->steps.step_ns.size(), truth->step_ns.size() - 1);
  for (size_t k = 0; k + 1 < truth->step_ns.size(); ++k) EXPECT_EQ(seen->steps.step_ns[k], truth->step_ns[k]);
  for (const StageReport& s : seen->stages) {
    EXPECT_EQ(s.source, "nvtx");
    EXPECT_EQ(s.forward_mean_ns, 2'000'000);
    EXPECT_EQ(s.backward_mean_ns, 4'000'000);
  }
  EXPECT_EQ(seen->ranks[0].forward_ranges, 3u * 8u);
}

TEST(ReportOnSyntheticRun, StepsFromTheDataParallelRhythmWithoutNvtx) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.nvtx = false;
  spec.steps = 5;
  const auto [truth, report] = report_of(spec, dir);
  EXPECT_EQ(report.steps.source, "collectives");
  ASSERT_EQ(report.steps.step_ns.size(), 4u);  // between the 5 reductions
  for (int64_t s : report.steps.step_ns)
    EXPECT_NEAR(static_cast<double>(s), static_cast<double>(truth.step_ns[1]), 1e3);
}

TEST(ReportOnSyntheticRun, HierarchicalZeroShardGroups) {
  ScratchDir dir;
  const auto [truth, report] = report_of(testing::hierarchical_zero_spec(), dir);
  EXPECT_EQ(report.layout.tp, 1);
  EXPECT_EQ(report.layout.pp, 1);
  EXPECT_EQ(report.layout.dp, 16);
  EXPECT_EQ(report.layout.zero_shard, 4);
  for (const RankReport& r : report.ranks) {
    EXPECT_EQ(r.stage, 0);
    EXPECT_EQ(r.shard_rank, r.rank % 4) << r.rank;
  }
  ASSERT_EQ(report.stages.size(), 1u);
  ASSERT_TRUE(report.stages[0].bubble_fraction.has_value());
  EXPECT_NEAR(*report.stages[0].bubble_fraction, truth.bubble_fraction[0], 1e-3);
}

TEST(ReportOnSyntheticRun, NcclBandwidthsFollowTheNcclTestsDefinitions) {
  // Hierarchical ZeRO over 16 ranks in shard groups of 4 (replica groups of 4 across them). Per
  // call, each rank's buffer: all-gather 64 MiB in 250 us, reduce-scatter 16 MiB in 250 us,
  // the replica all-reduce 256 MiB in 1 ms. nccl-tests (doc/PERFORMANCE.md): S = buffer x n for
  // all-gather and reduce-scatter, S = buffer for all-reduce; algbw = S / t; busbw = algbw x
  // (n-1)/n for all-gather and reduce-scatter, x 2(n-1)/n for all-reduce; n = 4.
  ScratchDir dir;
  // Not a structured binding: clang 14 cannot capture one in the lambdas below.
  const testing::Reported reported = report_of(testing::hierarchical_zero_spec(), dir);
  const RunReport& report = reported.report;
  auto find = [&](const std::string& role, const std::string& op) -> const NcclOpReport* {
    for (const NcclOpReport& n : report.nccl)
      if (n.role == role && n.op == op) return &n;
    return nullptr;
  };
  const NcclOpReport* gather = find("shard", "all_gather");
  const NcclOpReport* scatter = find("shard", "reduce_scatter");
  const NcclOpReport* reduce = find("data", "all_reduce");
  ASSERT_TRUE(gather && scatter && reduce);
  EXPECT_EQ(gather->comm_size, 4);
  EXPECT_NEAR(gather->algbw_bytes_per_s, 4 * 67108864.0 / 250e-6, 1e6);  // 1073.7 GB/s
  EXPECT_NEAR(gather->busbw_bytes_per_s, 4 * 67108864.0 / 250e-6 * 3 / 4, 1e6);
  EXPECT_NEAR(scatter->algbw_bytes_per_s, 4 * 16777216.0 / 250e-6, 1e6);
  EXPECT_NEAR(scatter->busbw_bytes_per_s, 4 * 16777216.0 / 250e-6 * 3 / 4, 1e6);
  EXPECT_NEAR(reduce->algbw_bytes_per_s, 268435456.0 / 1e-3, 1e6);
  EXPECT_NEAR(reduce->busbw_bytes_per_s, 268435456.0 / 1e-3 * 2 * 3 / 4, 1e6);
  EXPECT_EQ(reduce->calls, 3u);  // one a step
}

TEST(ReportOnSyntheticRun, GpuBreakdownAddsUpAndShowsHiddenCommunication) {
  ScratchDir dir;
  const auto [truth, report] = report_of(SyntheticRunSpec{}, dir);
  for (const RankReport& r : report.ranks) {
    const GpuBreakdown& g = r.gpu;
    ASSERT_TRUE(g.captured);
    EXPECT_EQ(g.compute_ns + g.comm_exposed_ns + g.copy_only_ns + g.idle_ns, g.span_ns) << r.rank;
    // The tensor-parallel all-reduce runs under the last 100 us of each of the 16 forward and
    // backward ranges of a step (sends that overlap the next micro-batch are hidden too).
    EXPECT_GE(g.comm_hidden_ns, 16 * 3 * 100'000) << r.rank;
    // The data-parallel reduction (1 ms per step) has no compute beside it.
    EXPECT_GE(g.comm_exposed_ns, 3 * 1'000'000) << r.rank;
    EXPECT_EQ(g.compute_ns, 3 * 8 * 6'000'000) << r.rank;
  }
  const auto nccl = std::find_if(report.categories.begin(), report.categories.end(),
                                 [](const CategoryStat& c) { return c.category == "nccl"; });
  EXPECT_NE(nccl, report.categories.end());
}

TEST(ReportOnSyntheticRun, PlannedVersusMeasuredComparesLikeWithLikeWithTheErrorOfEachFigure) {
  ScratchDir dir;
  ReportOptions options;
  options.plan_path = "plan.json";
  // A plan for tp 1 x pp 4 x dp 4 with 4 micro-batches of 2: the run is tp 2 x pp 4 x dp 2 with 8.
  options.plan_json = R"({"schema_version": 1,
      "inputs": {"config": {"tp": 1, "pp": 4, "dp": 4, "micro_batch": 2, "micro_batches": 4}},
      "suggested": {"bubble_fraction": 0.27, "iteration_s": 0.07,
      "stages": [{"layers": 8, "peak_memory_bytes": 10737418240, "allocated_bytes": 1, "forward_s": 0.0025,
                  "backward_s": 0.004, "optimizer_s": 0},
                 {"layers": 8, "peak_memory_bytes": 1, "allocated_bytes": 1, "forward_s": 0.002, "backward_s": 0.004,
                  "optimizer_s": 0},
                 {"layers": 8, "peak_memory_bytes": 1, "allocated_bytes": 1, "forward_s": 0.002, "backward_s": 0.004,
                  "optimizer_s": 0},
                 {"layers": 8, "peak_memory_bytes": 1, "allocated_bytes": 1, "forward_s": 0.002, "backward_s": 0.004,
                  "optimizer_s": 0}]}})";
  const auto [truth, report] = report_of(SyntheticRunSpec{}, dir, options);
  ASSERT_TRUE(report.plan.has_value());
  const PlanComparison& plan = *report.plan;
  EXPECT_EQ(plan.memory_figure, "reserved");
  ASSERT_EQ(plan.stages.size(), 4u);
  // Stage 0: 10 GiB planned (reserved, as the trace), 9 GiB measured (8 static + 4 x 256 MiB).
  const PlanStageComparison& first = plan.stages[0];
  EXPECT_EQ(first.peak_memory_bytes.predicted, 10.0 * (1ull << 30));
  EXPECT_EQ(first.peak_memory_bytes.measured, 9.0 * (1ull << 30));
  EXPECT_NEAR(first.peak_memory_bytes.error_percent.value_or(0), 100.0 / 9.0, 1e-9);
  EXPECT_DOUBLE_EQ(first.forward_s.measured.value_or(0), 0.002);
  EXPECT_NEAR(first.forward_s.error_percent.value_or(0), 25.0, 1e-9);  // 2.5 ms planned, 2 measured
  EXPECT_NEAR(first.backward_s.error_percent.value_or(1), 0.0, 1e-9);
  const double step = static_cast<double>(truth.step_ns[0]) * 1e-9;
  EXPECT_DOUBLE_EQ(plan.step_s.predicted, 0.07);
  EXPECT_NEAR(plan.step_s.measured.value_or(0), step, 1e-9);
  EXPECT_NEAR(plan.step_s.error_percent.value_or(0), (0.07 - step) / step * 100, 1e-6);
  double bubble = 0;
  for (double b : truth.bubble_fraction) bubble += b / 4;
  EXPECT_NEAR(plan.bubble_fraction.error_percent.value_or(0), (0.27 - bubble) / bubble * 100, 0.5);
  auto noted = [&](const std::string& text) {
    return std::find(plan.notes.begin(), plan.notes.end(), text) != plan.notes.end();
  };
  EXPECT_TRUE(noted("the plan is for tp 1, the run has tp 2: its per-stage figures are for another split"));
  EXPECT_TRUE(noted("the plan is for dp 4, the run has dp 2: its per-stage figures are for another split"));
  EXPECT_FALSE(noted("the plan is for pp 4, the run has pp 4: its per-stage figures are for another split"));
  EXPECT_TRUE(
      noted("the plan has 4 micro-batches a step (micro-batch size 2), the run 8 on stage 0: the "
            "micro-batch size or the global batch differ"));
}

TEST(ReportOnSyntheticRun, PlannedVersusMeasuredSplitsEachStagesGpuTimeByKindOfWork) {
  // Every stage runs 8 micro-batches a step of 2 ms forward and 4 ms backward compute, 60 % in
  // GEMM kernels, 20 % attention, 20 % elementwise: 28.8, 9.6 and 9.6 ms a step.
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.gemm_share = 0.6;
  spec.attention_share = 0.2;
  ReportOptions options;
  options.plan_path = "plan.json";
  const std::string stage =
      R"({"layers": 8, "peak_memory_bytes": 1, "allocated_bytes": 1, "forward_s": 0.0022,
      "backward_s": 0.0044,
      "optimizer_s": 0.0005, "work": {
        "forward": {"gemm_s": 0.0015, "attention_s": 0.0004, "memory_bound_s": 0.0003, "communication_s": 0},
        "backward": {"gemm_s": 0.003, "attention_s": 0.0009, "memory_bound_s": 0.0005, "communication_s": 0}}})";
  options.plan_json = R"({"schema_version": 1, "inputs": {"config": {"micro_batches": 8}},
      "suggested": {"bubble_fraction": 0.2, "iteration_s": 0.07, "stages": [)" +
                      stage + "," + stage + "," + stage + "," + stage + "]}}";
  const auto [truth, report] = report_of(spec, dir, options);
  ASSERT_TRUE(report.plan.has_value());
  ASSERT_EQ(report.plan->stages.size(), 4u);
  for (const PlanStageComparison& s : report.plan->stages) {
    ASSERT_TRUE(s.gemm_s && s.attention_s && s.memory_bound_s) << s.stage;
    EXPECT_NEAR(s.gemm_s->predicted, 8 * 0.0045, 1e-12);
    EXPECT_NEAR(s.attention_s->predicted, 8 * 0.0013, 1e-12);
    EXPECT_NEAR(s.memory_bound_s->predicted, 8 * 0.0008 + 0.0005, 1e-12);  // with the optimizer step
    EXPECT_NEAR(s.gemm_s->measured.value_or(0), 0.0288, 1e-6) << s.stage;
    EXPECT_NEAR(s.attention_s->measured.value_or(0), 0.0096, 1e-6) << s.stage;
    EXPECT_NEAR(s.memory_bound_s->measured.value_or(0), 0.0096, 1e-6) << s.stage;
    EXPECT_NEAR(s.gemm_s->error_percent.value_or(0), (0.036 - 0.0288) / 0.0288 * 100, 1e-3);
  }
  // A plan from before the split by kind compares no kinds.
  ScratchDir again;
  options.plan_json = R"({"schema_version": 1, "inputs": {"config": {"micro_batches": 8}},
      "suggested": {"bubble_fraction": 0.2, "iteration_s": 0.07,
                    "stages": [{"layers": 32, "forward_s": 0.002, "backward_s": 0.004, "peak_memory_bytes": 1e9,
                                "allocated_bytes": 1e9, "optimizer_s": 0}]}})";
  const auto [truth2, older] = report_of(spec, again, options);
  ASSERT_TRUE(older.plan.has_value());
  EXPECT_FALSE(older.plan->stages[0].gemm_s.has_value());
}

TEST(ReportOnSyntheticRun, APlanFigureTheTracesDoNotShowHasNoError) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.nvtx = false;
  spec.gpu = false;
  spec.memory = false;
  ReportOptions options;
  options.plan_json = R"({"schema_version": 1, "suggested": {"bubble_fraction": 0.27, "iteration_s": 0.07,
      "stages": [{"layers": 32, "peak_memory_bytes": 5, "allocated_bytes": 5, "forward_s": 0.002,
                  "backward_s": 0.004, "optimizer_s": 0}]}})";
  const auto [truth, report] = report_of(spec, dir, options);
  ASSERT_TRUE(report.plan.has_value());
  const PlanStageComparison& first = report.plan->stages.at(0);
  EXPECT_FALSE(first.peak_memory_bytes.measured.has_value());
  EXPECT_FALSE(first.forward_s.measured.has_value());
  EXPECT_FALSE(first.forward_s.error_percent.has_value());
  EXPECT_FALSE(report.plan->bubble_fraction.error_percent.has_value());
}

TEST(ReportOnSyntheticRun, ABadPlanIsAnError) {
  ScratchDir dir;
  ASSERT_TRUE(synthetic::write_synthetic_run(SyntheticRunSpec{}, dir.path()).ok());
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok());
  for (const char* plan : {"not json", "{}", R"({"schema_version": 1, "suggested": {"stages": 3}})"}) {
    ReportOptions options;
    options.plan_json = plan;
    options.plan_path = "p.json";
    const auto report = build_run_report(*run, options);
    ASSERT_FALSE(report.ok()) << plan;
    EXPECT_NE(report.error().message.find("p.json"), std::string::npos);
  }
}

TEST(ReportOnSyntheticRun, NvtxStageRangesDeclareStagesWithoutP2p) {
  ScratchDir dir;
  SyntheticRunSpec spec;
  spec.pipeline_p2p = false;
  spec.stage_ranges = true;
  const auto [truth, report] = report_of(spec, dir);
  EXPECT_EQ(report.layout.source, "inferred");
  EXPECT_EQ(report.layout.tp, 2);
  EXPECT_EQ(report.layout.pp, 4);
  EXPECT_EQ(report.layout.dp, 2);
  for (const RankReport& r : report.ranks) {
    EXPECT_EQ(r.stage, truth.stage[static_cast<size_t>(r.rank)]) << r.rank;
    EXPECT_EQ(r.tp_rank, truth.tp_rank[static_cast<size_t>(r.rank)]) << r.rank;
    EXPECT_EQ(r.dp_rank, truth.dp_rank[static_cast<size_t>(r.rank)]) << r.rank;
  }
  const auto& notes = report.layout.notes;
  EXPECT_NE(
      std::find(notes.begin(), notes.end(), "layout: tp 2 x pp 4 x dp 2, zero_shard 1, ep 1 (inferred)"),
      notes.end());
  ASSERT_EQ(report.stages.size(), 4u);
  EXPECT_EQ(report.stages[0].peak_activation_bytes, truth.peak_activation_bytes[0]);
}

TEST(GpuBusySeries, IsTheUnionOfGpuActivityPerBucketAsAFraction) {
  // One rank, kernels (ms, on its clock) [1, 6.5) and [3, 4) inside it, [11, 12), [19, 20): on
  // the run's clock, from its first event at 1 ms, 1 ms buckets.
  ScratchDir dir;
  auto writer = trace::TraceWriter::create(dir.file("rank-0.1.pst"), {});
  ASSERT_TRUE(writer.ok());
  trace::ThreadBuffer* out = (*writer)->register_thread(trace::FullBufferPolicy::kDrainInline);
  const uint32_t name = (*writer)->intern("void gemm_kernel<float>(float*)");
  for (auto [start_us, end_us] : {std::pair{1000, 6500}, {3000, 4000}, {11000, 12000}, {19000, 20000}}) {
    auto k = trace::make_record<trace::KernelRecord>();
    k.start_ns = static_cast<uint64_t>(start_us) * 1000;
    k.end_ns = static_cast<uint64_t>(end_us) * 1000;
    k.name_id = name;
    out->append(k);
  }
  ASSERT_TRUE((*writer)->close().ok());
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  const auto report = build_run_report(*run, {});
  ASSERT_TRUE(report.ok());
  const Series& busy = report->gpu_busy;
  EXPECT_EQ(busy.start_ns, 0);
  EXPECT_EQ(busy.bucket_ns, 1'000'000);
  std::vector<double> expected(20, 0.0);
  for (size_t b = 0; b < 5; ++b) expected[b] = 1.0;
  expected[5] = 0.5;
  expected[10] = 1.0;
  expected[18] = 1.0;
  ASSERT_EQ(busy.values.size(), expected.size());
  for (size_t b = 0; b < expected.size(); ++b)
    EXPECT_DOUBLE_EQ(busy.values[b], expected[b]) << "bucket " << b;
  EXPECT_DOUBLE_EQ(report->ranks[0].gpu.gpu_busy_fraction, 7.5 / 19);
}

TEST(RankScan, UndefinedNameIdsCountAsNoName) {
  // A record naming a string the table never defined must not size any table by its id.
  ScratchDir dir;
  const std::string path = dir.file("rank-0.1.pst");
  auto writer = trace::TraceWriter::create(path, {});
  ASSERT_TRUE(writer.ok());
  trace::ThreadBuffer* out = (*writer)->register_thread(trace::FullBufferPolicy::kDrainInline);
  auto k = trace::make_record<trace::KernelRecord>();
  k.start_ns = 1000;
  k.end_ns = 2000;
  k.name_id = 0xFFFFFF00u;
  out->append(k);
  auto push = trace::make_record<trace::NvtxRecord>();
  push.event = static_cast<uint8_t>(trace::NvtxEvent::kPush);
  push.timestamp_ns = 1000;
  push.name_id = 0xFFFFFFF0u;
  out->append(push);
  ASSERT_TRUE((*writer)->close().ok());
  auto digest = scan_rank_trace(path, {});
  ASSERT_TRUE(digest.ok()) << digest.error().message;
  EXPECT_EQ(digest->compute_union_ns, 1000);
  EXPECT_LE(digest->kernels.size(), 1u);
}

TEST(ReportOnSyntheticRun, StatedLayoutIsTakenAndChecked) {
  ScratchDir dir;
  ASSERT_TRUE(synthetic::write_synthetic_run(SyntheticRunSpec{}, dir.path()).ok());
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok());
  ReportOptions options;
  options.stated_layout = StatedLayout{2, 4, 2};
  const auto ok = build_run_report(*run, options);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->layout.source, "stated");
  // The p2p chains have 4 stages: the user's word is taken, with a warning naming the conflict.
  options.stated_layout = StatedLayout{4, 2, 2};
  const auto refuted = build_run_report(*run, options);
  ASSERT_TRUE(refuted.ok());
  EXPECT_EQ(refuted->layout.source, "stated");
  EXPECT_EQ(refuted->layout.tp, 4);
  EXPECT_EQ(refuted->layout.pp, 2);
  EXPECT_EQ(refuted->ranks[13].stage, 1);  // Megatron's order: 13 = 1 + 4 * (1 + 2 * 1)
  EXPECT_EQ(refuted->ranks[13].tp_rank, 1);
  EXPECT_EQ(refuted->ranks[13].dp_rank, 1);
  const auto warning = std::find_if(
      refuted->warnings.begin(), refuted->warnings.end(),
      [](const std::string& w) { return w.starts_with("--layout tp=4,pp=2,dp=2 is used as stated"); });
  ASSERT_NE(warning, refuted->warnings.end());
  EXPECT_NE(warning->find("the p2p flows form pipeline chains of 4 stages"), std::string::npos) << *warning;
  for (const std::string& w : refuted->warnings)
    EXPECT_EQ(w.find("state it with --layout"), std::string::npos) << w;
  // Sizes that do not make the world cannot be used at all.
  options.stated_layout = StatedLayout{2, 2, 2};
  const auto impossible = build_run_report(*run, options);
  ASSERT_TRUE(impossible.ok());
  EXPECT_EQ(impossible->layout.source, "unknown");
}

}  // namespace
}  // namespace pipescope::analysis
