// Plans as a user reads them: the 1F1B in-flight rule per stage, the two memory figures, and
// the properties the issue names (memory never falls as the micro-batch grows; the suggested
// split never peaks above the uniform one; a plan that does not fit says what would).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/plan.h"
#include "planner_fixture.h"

namespace pipescope::planner {
namespace {

PlanOutcome plan_for(const std::string& model, ParallelConfig c) {
  auto outcome = make_plan(test::inputs(model, "dgx-a100", std::move(c)));
  EXPECT_TRUE(outcome.ok()) << outcome.error().message;
  return outcome.ok() ? *outcome : PlanOutcome{};
}

ParallelConfig pipeline(int64_t gpus, int64_t tp, int64_t pp, int64_t gbs) {
  ParallelConfig c;
  c.gpus = gpus;
  c.tp = tp;
  c.pp = pp;
  c.global_batch = gbs;
  c.sequence_parallel = tp > 1;
  return c;
}

TEST(OneFOneB, StageSHoldsMinOfPMinusSAndMMicrobatches) {
  const PlanOutcome p = plan_for("llama2-7b", pipeline(8, 1, 8, 64));  // m = 64
  ASSERT_EQ(p.uniform.stages.size(), 8u);
  for (const StageReport& s : p.uniform.stages) EXPECT_EQ(s.in_flight, 8 - s.index) << s.index;
  const PlanOutcome few = plan_for("llama2-7b", pipeline(8, 1, 8, 3));  // m = 3 < p
  for (const StageReport& s : few.uniform.stages) EXPECT_EQ(s.in_flight, std::min(8 - s.index, 3)) << s.index;
}

TEST(OneFOneB, FirstStageHoldsPTimesTheActivationsOfAMiddleStageWithOneMicrobatch) {
  const PlanOutcome p = plan_for("llama2-7b", pipeline(8, 1, 8, 64));
  const StageReport& first_middle = p.uniform.stages[1];  // 7 in flight, 4 layers, no embedding
  const StageReport& last_middle = p.uniform.stages[6];   // 2 in flight, 4 layers
  EXPECT_EQ(first_middle.layers, last_middle.layers);
  EXPECT_EQ(first_middle.activation_bytes * 2, last_middle.activation_bytes * 7);
}

TEST(PlanMemory, ReservedIsAllocatedPlusAllocatorReservePlusFixedOverheads) {
  PlanInputs in = test::inputs("llama2-7b", "dgx-a100", pipeline(8, 2, 4, 32));
  auto costs = build_cost_model(in);
  ASSERT_TRUE(costs.ok());
  const PlanOutcome p = *make_plan(in);
  for (const StageReport& s : p.uniform.stages) {
    EXPECT_EQ(s.allocated_bytes, s.static_bytes + s.activation_bytes + s.transient_bytes);
    EXPECT_EQ(s.peak_memory_bytes,
              std::llround(static_cast<double>(s.allocated_bytes) * (1 + costs->reserve_fraction)) +
                  costs->fixed_bytes);
  }
}

TEST(PlanMemory, NeverDecreasesWhenTheMicroBatchGrows) {
  for (const char* model : {"llama2-7b", "gpt3-175b"}) {
    int64_t previous = 0;
    for (int64_t mbs : {1, 2, 4}) {
      ParallelConfig c = pipeline(64, 8, 4, 64);
      c.micro_batch = mbs;
      const PlanOutcome p = plan_for(model, c);
      EXPECT_GE(p.uniform.peak_memory_bytes, previous) << model << " mbs " << mbs;
      previous = p.uniform.peak_memory_bytes;
    }
  }
}

TEST(PlanMemory, NeverDecreasesWhenTheMicroBatchGrowsForEveryExplicitRecomputeMode) {
  for (RecomputeChoice recompute :
       {RecomputeChoice::kNone, RecomputeChoice::kSelective, RecomputeChoice::kFull}) {
    int64_t previous = 0;
    for (int64_t mbs : {1, 2, 4}) {
      ParallelConfig c = pipeline(64, 8, 4, 64);
      c.recompute = recompute;
      c.micro_batch = mbs;
      const PlanOutcome p = plan_for("llama2-13b", c);
      EXPECT_GE(p.uniform.peak_memory_bytes, previous) << to_string(recompute) << " mbs " << mbs;
      previous = p.uniform.peak_memory_bytes;
    }
  }
}

TEST(PlanMemory, UnderAutoRecomputeThePeakCanFallWhenTheMicroBatchGrows) {
  // The property above is for a fixed recompute mode. --recompute auto picks the modes, and a
  // larger micro-batch can make it switch: gpt3-175b at tp 8, pp 8 on dgx-a100 recomputes one
  // layer of its first stage at mbs 1 (keeping the rest is fastest, and fits), but at mbs 2 the
  // stages no longer fit that way, and recomputing more layers keeps so much less that the
  // balanced peak ends up lower.
  ParallelConfig c = pipeline(64, 8, 8, 64);
  c.seq_length = 4096;
  c.recompute = RecomputeChoice::kAuto;
  const PlanOutcome one = plan_for("gpt3-175b", c);
  c.micro_batch = 2;
  const PlanOutcome two = plan_for("gpt3-175b", c);
  EXPECT_LT(two.suggested.peak_memory_bytes, one.suggested.peak_memory_bytes);
  EXPECT_GT(two.suggested.stages[0].full_recompute_layers, one.suggested.stages[0].full_recompute_layers);
}

TEST(PlanSplit, SuggestedNeverPeaksAboveUniform) {
  for (RecomputeChoice recompute :
       {RecomputeChoice::kNone, RecomputeChoice::kSelective, RecomputeChoice::kAuto}) {
    for (auto [gpus, tp, pp] : {std::tuple{8, 1, 8}, {16, 2, 4}, {8, 1, 2}}) {
      ParallelConfig c = pipeline(gpus, tp, pp, 64);
      c.recompute = recompute;
      c.seq_length = 8192;
      const PlanOutcome p = plan_for("llama2-13b", c);
      EXPECT_LE(p.suggested.peak_memory_bytes, p.uniform.peak_memory_bytes) << describe(p.config);
      int layers = 0;
      for (const StageReport& s : p.suggested.stages) layers += s.layers;
      EXPECT_EQ(layers, 40);
    }
  }
}

TEST(PlanSplit, AutoRecomputeRelievesTheFirstStageWhenMemoryBinds) {
  ParallelConfig c = pipeline(8, 1, 8, 64);
  c.seq_length = 8192;
  c.recompute = RecomputeChoice::kAuto;
  const PlanOutcome p = plan_for("llama2-13b", c);
  EXPECT_TRUE(p.suggested.fits);
  EXPECT_EQ(p.suggested.stages.front().recompute, "full");
  EXPECT_EQ(p.suggested.stages.back().recompute, "none");  // one micro-batch in flight: no need
  EXPECT_LT(p.suggested.peak_memory_bytes, p.uniform.peak_memory_bytes);
}

TEST(PlanFit, APlanThatDoesNotFitIsStillAPlanWithWaysToFit) {
  // llama2-70b on 16 GPUs with tp 8, pp 2, no ZeRO: ~8.7e9 parameters a rank at 18 bytes each.
  const PlanOutcome p = plan_for("llama2-70b", pipeline(16, 8, 2, 16));
  EXPECT_FALSE(p.suggested.fits);
  ASSERT_FALSE(p.suggestions.empty());
  bool some_fits = false;
  for (const FitSuggestion& s : p.suggestions) some_fits = some_fits || s.fits;
  EXPECT_TRUE(some_fits);
  bool flagged = false;
  for (const StageReport& s : p.suggested.stages) flagged = flagged || s.overflows;
  EXPECT_TRUE(flagged);
}

TEST(PlanThroughput, FiguresFollowFromTheIterationTime) {
  const PlanOutcome p = plan_for("llama2-7b", pipeline(16, 2, 2, 64));
  const PlanReport& r = p.suggested;
  ASSERT_GT(r.iteration_s, 0);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 64.0 * 4096 / r.iteration_s);
  EXPECT_NEAR(r.mfu, r.tflops_per_gpu * 1e12 / 312e12, 1e-12);  // A100: 312 TFLOP/s dense bf16
  EXPECT_GE(r.iteration_s, r.pipeline_s);
  EXPECT_GT(r.bubble_fraction, 0);
  EXPECT_LT(r.bubble_fraction, 1);
}

TEST(PlanTime, DeepSpeedSyncsGradientsAfterTheBackwardWhereMegatronHidesThem) {
  // 16 GPUs, tp 2, pp 2, dp 4 across two nodes: the gradient all-reduce crosses the NICs. DeepSpeed's
  // pipeline engine runs ReduceGrads after the last backward, so its whole sync is exposed;
  // Megatron-LM overlaps its sync with that backward and exposes only what the backward cannot hide.
  ParallelConfig c = pipeline(16, 2, 2, 64);
  c.zero_stage = 1;
  const PlanOutcome megatron = plan_for("llama2-7b", c);
  c.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  const PlanOutcome deepspeed = plan_for("llama2-7b", c);
  auto costs = build_cost_model(test::inputs("llama2-7b", "dgx-a100", c));
  ASSERT_TRUE(costs.ok());
  EXPECT_FALSE(costs->sync_overlaps_backward);
  for (const StageReport& st : deepspeed.uniform.stages) {
    double sync_s = 0;
    for (int u = st.first_unit; u < st.end_unit; ++u)
      sync_s += costs->units[static_cast<size_t>(u)].dp_sync_s;
    EXPECT_GT(sync_s, 0);
    EXPECT_DOUBLE_EQ(st.dp_sync_exposed_s, sync_s) << st.index;
  }
  // Megatron's backward outlasts its sync, and exposes only the part of it that the sync slowed
  // (the A100 profile's compute-beside-communication loss).
  c.optimizer = OptimizerRecipe::kMegatron;
  auto megatron_costs = build_cost_model(test::inputs("llama2-7b", "dgx-a100", c));
  ASSERT_TRUE(megatron_costs.ok());
  EXPECT_TRUE(megatron_costs->sync_overlaps_backward);
  const double s = megatron_costs->sync_overlap_slowdown;
  EXPECT_GT(s, 0);
  for (const StageReport& st : megatron.uniform.stages) {
    double sync_s = 0;
    for (int u = st.first_unit; u < st.end_unit; ++u)
      sync_s += megatron_costs->units[static_cast<size_t>(u)].dp_sync_s;
    EXPECT_LT(sync_s * (1 + s), st.backward_s) << st.index;
    EXPECT_NEAR(st.dp_sync_exposed_s, sync_s * s / (1 + s), 1e-12) << st.index;
  }
  EXPECT_DOUBLE_EQ(exposed_sync_s(3, 1, true), 2);
  EXPECT_DOUBLE_EQ(exposed_sync_s(1, 3, true), 0);
  EXPECT_DOUBLE_EQ(exposed_sync_s(3, 1, false), 3);
}

TEST(PlanMemory, DeepSpeedsStepBuffersShowInTheHeldFigureNotInThePeak) {
  // 16 GPUs, tp 2, pp 2: each stage's step casts its 2 bytes per parameter of gradients to bf16
  // after the activations are freed. Far below the pipeline phase, so the peak (what runs out) is
  // the pipeline phase's; what the allocator holds after the step adds the cast's segments.
  ParallelConfig c = pipeline(16, 2, 2, 64);
  c.zero_stage = 1;
  c.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  const PlanOutcome p = plan_for("llama2-7b", c);
  auto costs = build_cost_model(test::inputs("llama2-7b", "dgx-a100", c));
  ASSERT_TRUE(costs.ok());
  for (const StageReport& st : p.uniform.stages) {
    EXPECT_EQ(st.step_bytes, 2 * st.parameters) << st.index;
    const int64_t pipeline_bytes = st.static_bytes + st.activation_bytes + st.transient_bytes;
    ASSERT_GT(pipeline_bytes, st.static_bytes + st.step_bytes);
    EXPECT_EQ(st.allocated_bytes, pipeline_bytes);
    EXPECT_EQ(st.peak_memory_bytes,
              std::llround(static_cast<double>(pipeline_bytes) * (1 + costs->reserve_fraction)) +
                  costs->fixed_bytes);
    EXPECT_EQ(st.reserved_bytes, st.peak_memory_bytes + st.step_bytes) << st.index;
  }
  int64_t held = 0;
  for (const StageReport& st : p.uniform.stages) held = std::max(held, st.reserved_bytes);
  EXPECT_EQ(p.uniform.reserved_bytes, held);
  EXPECT_GT(p.uniform.reserved_bytes, p.uniform.peak_memory_bytes);
  // Megatron-LM's step needs nothing new: both figures agree.
  c.optimizer = OptimizerRecipe::kMegatron;
  for (const StageReport& st : plan_for("llama2-7b", c).uniform.stages) {
    EXPECT_EQ(st.step_bytes, 0);
    EXPECT_EQ(st.reserved_bytes, st.peak_memory_bytes);
  }
}

TEST(PlanWork, TheBusiestStageRunsItsMicroBatchesPassesAndItsStep) {
  ParallelConfig c;
  c.gpus = 32;
  c.tp = 8;
  c.pp = 4;
  c.global_batch = 16;
  const PlanInputs in = test::inputs("llama2-13b", "dgx-a100", c);
  auto plan = make_plan(in);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const PlanReport& r = plan->suggested;
  const double m = static_cast<double>(plan->config.micro_batches());
  const StageStepWork busiest = busiest_stage_work(r, plan->config.micro_batches());
  for (const StageReport& st : r.stages) {
    const double step_s = m * (st.forward_s + st.backward_s) + st.optimizer_s + st.dp_sync_exposed_s;
    EXPECT_LE(step_s, busiest.total_s() * (1 + 1e-12)) << st.index;
  }
  const StageReport& st = r.stages[static_cast<size_t>(busiest.stage)];
  EXPECT_NEAR(busiest.pipeline.total_s(), m * (st.forward_s + st.backward_s), 1e-12 * busiest.total_s());
  EXPECT_EQ(busiest.optimizer_s, st.optimizer_s);
  EXPECT_GT(busiest.pipeline[WorkKind::kCommunication], 0);  // tp 8 all-reduces, every layer
}

TEST(PlanSchedule, GPipeHoldsEveryMicrobatchOnEveryStage) {
  ParallelConfig c = pipeline(8, 1, 4, 16);  // dp 2, m = 8
  c.schedule = ScheduleKind::kGPipe;
  const PlanOutcome p = plan_for("llama2-7b", c);
  for (const StageReport& s : p.uniform.stages) EXPECT_EQ(s.in_flight, 8);
}

TEST(PlanSchedule, InterleavedShowsMegatronsUniformChunks) {
  ParallelConfig c = pipeline(8, 1, 4, 16);  // dp 2, m = 8
  c.schedule = ScheduleKind::kInterleaved;
  c.vpp = 2;
  const PlanOutcome p = plan_for("llama2-7b", c);
  ASSERT_EQ(p.uniform.stages.size(), 4u);
  for (const StageReport& s : p.uniform.stages) EXPECT_EQ(s.layers, 8);
  EXPECT_TRUE(p.uniform.stages[0].has_embedding);
  EXPECT_TRUE(p.uniform.stages[3].has_head);
  // Interleaving shrinks the bubble against plain 1F1B on the same layout.
  ParallelConfig plain = pipeline(8, 1, 4, 16);
  EXPECT_LT(p.uniform.bubble_fraction, plan_for("llama2-7b", plain).uniform.bubble_fraction);
}

// A layout with uneven chunks: each stage runs its own chunks (chunk g on stage g mod p), and its
// time per micro-batch is the sum of those chunks' units, as the cost model prices them.
TEST(PlanSchedule, InterleavedLayoutPricesEachStageOnItsOwnChunks) {
  ParallelConfig c = pipeline(8, 1, 4, 16);
  c.schedule = ScheduleKind::kInterleaved;
  c.vpp = 2;
  c.chunk_layers = {0, 4, 4, 4, 4, 4, 4, 8};  // the embedding alone, the head with 8 layers
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  const PlanOutcome p = plan_for("llama2-7b", c);
  auto costs = build_cost_model(in);
  ASSERT_TRUE(costs.ok());
  ASSERT_EQ(p.uniform.stages.size(), 4u);
  EXPECT_TRUE(p.baseline_is_given_split);
  int first_unit_of_chunk = 1;
  std::vector<double> forward(4, 0.0);
  for (size_t g = 0; g < 8; ++g) {
    const int layers = static_cast<int>(c.chunk_layers[g]);
    if (g == 0) forward[0] += costs->units[0].by_mode[0].forward_s;
    for (int u = first_unit_of_chunk; u < first_unit_of_chunk + layers; ++u)
      forward[g % 4] += costs->units[static_cast<size_t>(u)].by_mode[0].forward_s;
    first_unit_of_chunk += layers;
    if (g == 7) forward[3] += costs->units.back().by_mode[0].forward_s;
  }
  const std::vector<std::vector<int>> chunk_layers = {{0, 4}, {4, 4}, {4, 4}, {4, 8}};
  for (size_t s = 0; s < 4; ++s) {
    const StageReport& st = p.uniform.stages[s];
    EXPECT_EQ(st.chunk_layers, chunk_layers[s]) << s;
    EXPECT_EQ(st.layers, chunk_layers[s][0] + chunk_layers[s][1]) << s;
    EXPECT_NEAR(st.forward_s, forward[s], 1e-12 * forward[s]) << s;
  }
  EXPECT_TRUE(p.uniform.stages[0].has_embedding);
  EXPECT_TRUE(p.uniform.stages[3].has_head);
  EXPECT_FALSE(p.uniform.stages[3].has_embedding);

  // A layout of Megatron-LM's uniform chunks is the plan without one.
  ParallelConfig uniform = c;
  uniform.chunk_layers.clear();
  ParallelConfig as_layout = c;
  as_layout.chunk_layers.assign(8, 4);
  const PlanOutcome a = plan_for("llama2-7b", uniform), b = plan_for("llama2-7b", as_layout);
  EXPECT_DOUBLE_EQ(a.uniform.iteration_s, b.uniform.iteration_s);
  EXPECT_EQ(a.uniform.peak_memory_bytes, b.uniform.peak_memory_bytes);
  for (size_t s = 0; s < 4; ++s)
    EXPECT_EQ(a.uniform.stages[s].activation_bytes, b.uniform.stages[s].activation_bytes);
}

TEST(ResolveConfig, AnInterleavedLayoutMustMatchTheChunksAndTheLayers) {
  auto model = models::load_model("llama2-7b");
  ASSERT_TRUE(model.ok());
  ParallelConfig c = pipeline(8, 1, 4, 16);
  c.schedule = ScheduleKind::kInterleaved;
  c.vpp = 2;
  c.chunk_layers = {4, 4, 4, 4, 4, 4, 4};
  EXPECT_EQ(resolve_config(*model, c).error().message,
            "--pipeline-layout has 7 chunks; --pp 4 x --vpp 2 needs 8");
  c.chunk_layers = {4, 4, 4, 4, 4, 4, 4, 5};
  EXPECT_EQ(resolve_config(*model, c).error().message,
            "--pipeline-layout has 33 decoder layers (t); the model has 32");
  // Chunks that do not divide the layers evenly are what a layout is for.
  c.vpp = 3;
  c.chunk_layers = {3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2};
  EXPECT_TRUE(resolve_config(*model, c).ok());
  c.chunk_layers.clear();
  EXPECT_EQ(resolve_config(*model, c).error().message,
            "--pp 4 x --vpp 3 does not divide the model's 32 layers; give the chunks with --pipeline-layout");
}

// A stage's units are its chunks, not the units between its first and its last: under full
// recomputation it recomputes its own layers only.
TEST(PlanSchedule, InterleavedFullRecomputationCountsTheStagesOwnLayers) {
  ParallelConfig c = pipeline(8, 1, 4, 16);
  c.schedule = ScheduleKind::kInterleaved;
  c.vpp = 2;
  c.recompute = RecomputeChoice::kFull;
  const PlanOutcome p = plan_for("llama2-7b", c);
  ASSERT_EQ(p.uniform.stages.size(), 4u);
  for (const StageReport& s : p.uniform.stages) {
    EXPECT_EQ(s.layers, 8) << s.index;
    EXPECT_EQ(s.full_recompute_layers, 8) << s.index;
  }
}

// The last stage's final chunk carries the LM head and the logits, and 1F1B's interleaving runs
// its backward right after its forward: it is in flight for one micro-batch at a time while the
// stage's other chunks are in flight for many, so the logits count once.
TEST(PlanSchedule, InterleavedLastStageHoldsOneMicrobatchOfLogits) {
  ParallelConfig c = pipeline(8, 1, 4, 16);  // dp 2, m = 8, 4 layers per chunk
  c.schedule = ScheduleKind::kInterleaved;
  c.vpp = 2;
  const PlanOutcome p = plan_for("llama2-7b", c);
  ParallelConfig plain = pipeline(8, 1, 4, 16);
  const PlanOutcome one_f_one_b = plan_for("llama2-7b", plain);
  // Plain 1F1B's last stage holds one micro-batch: 8 layers and the head.
  const int64_t head_and_layers = one_f_one_b.uniform.stages[3].activation_bytes;
  const StageReport& middle = p.uniform.stages[2];  // two chunks of 4 plain layers
  const StageReport& last = p.uniform.stages[3];
  ASSERT_EQ(last.in_flight, 5);  // (v - 1) p + 1
  const int64_t layer_chunk = middle.activation_bytes / middle.in_flight;
  const int64_t head = head_and_layers - 2 * layer_chunk;
  ASSERT_GT(head, layer_chunk / 10);  // fp32 logits over a 32,000-word vocabulary: no rounding error
  EXPECT_EQ(last.activation_bytes, std::max(4 * layer_chunk + (layer_chunk + head), 5 * layer_chunk));
}

// --recompute auto on the interleaved schedule takes one mode on every stage: the fastest of
// none, selective and full that fits, and says which.
TEST(PlanSchedule, InterleavedAutoTakesTheFastestModeThatFits) {
  struct Case {
    int64_t gbs, seq;
    const char* mode;
  };
  // llama2-7b on 4 stages of 2 chunks, dp 2: short sequences fit without recomputation; at 8192
  // tokens and 32 micro-batches only full recomputation does.
  for (const Case& k : {Case{16, 2048, "none"}, Case{64, 8192, "full"}}) {
    ParallelConfig c = pipeline(8, 1, 4, k.gbs);
    c.schedule = ScheduleKind::kInterleaved;
    c.vpp = 2;
    c.seq_length = k.seq;
    std::optional<PlanOutcome> fastest;
    for (RecomputeChoice mode :
         {RecomputeChoice::kNone, RecomputeChoice::kSelective, RecomputeChoice::kFull}) {
      c.recompute = mode;
      const PlanOutcome fixed = plan_for("llama2-7b", c);
      if (fixed.suggested.fits && (!fastest || fixed.suggested.iteration_s < fastest->suggested.iteration_s))
        fastest = fixed;
    }
    ASSERT_TRUE(fastest.has_value()) << k.mode;
    EXPECT_EQ(to_string(fastest->config.recompute), k.mode);
    c.recompute = RecomputeChoice::kAuto;
    const PlanOutcome p = plan_for("llama2-7b", c);
    EXPECT_TRUE(p.suggested.fits) << k.mode;
    EXPECT_EQ(p.suggested.iteration_s, fastest->suggested.iteration_s) << k.mode;
    for (const StageReport& s : p.suggested.stages) EXPECT_EQ(s.recompute, k.mode);
    ASSERT_TRUE(p.interleaved_recompute.has_value()) << k.mode;
    EXPECT_EQ(to_string(*p.interleaved_recompute), k.mode);
  }
}

}  // namespace
}  // namespace pipescope::planner

namespace pipescope::planner {
namespace {

TEST(PlanBaseline, AGivenSplitReplacesTheUniformOne) {
  ParallelConfig c = pipeline(8, 1, 4, 32);
  c.stage_layers = {5, 9, 9, 9};  // llama2-7b's 32 layers, the first stage lightened
  const PlanOutcome p = plan_for("llama2-7b", c);
  EXPECT_TRUE(p.baseline_is_given_split);
  ASSERT_EQ(p.uniform.stages.size(), 4u);
  EXPECT_EQ(p.uniform.stages[0].layers, 5);
  EXPECT_TRUE(p.uniform.stages[0].has_embedding);
  EXPECT_EQ(p.uniform.stages[3].layers, 9);
  EXPECT_TRUE(p.uniform.stages[3].has_head);
}

TEST(PlanBaseline, AGivenSplitMustCoverEveryLayerOnceAndEveryStage) {
  ParallelConfig c;
  c.gpus = 8;
  c.pp = 4;
  c.stage_layers = {8, 8, 8};
  auto model = models::load_model("llama2-7b");
  auto wrong_stages = resolve_config(*model, c);
  ASSERT_FALSE(wrong_stages.ok());
  EXPECT_NE(wrong_stages.error().message.find("3 stages but --pp is 4"), std::string::npos);
  c.stage_layers = {8, 8, 8, 9};
  auto wrong_total = resolve_config(*model, c);
  ASSERT_FALSE(wrong_total.ok());
  EXPECT_NE(wrong_total.error().message.find("33 layers; the model has 32"), std::string::npos);
}

}  // namespace
}  // namespace pipescope::planner

namespace pipescope::planner {
namespace {

TEST(PlanRecompute, AutoRecomputesOnlyTheLayersAStageNeedsToStayWithinThePeak) {
  ParallelConfig c = pipeline(8, 1, 8, 64);
  c.seq_length = 8192;
  c.recompute = RecomputeChoice::kAuto;
  const PlanOutcome p = plan_for("llama2-13b", c);
  bool partial = false;
  for (const StageReport& s : p.suggested.stages) {
    if (s.recompute == "full") {
      EXPECT_LE(s.full_recompute_layers, s.layers);
      partial = partial || s.full_recompute_layers < s.layers;
    }
    EXPECT_LE(s.peak_memory_bytes, p.suggested.peak_memory_bytes);
  }
  EXPECT_TRUE(partial) << "stage 0 needs only some of its layers recomputed at this peak";

  // The same split with every full stage recomputing all its layers is no faster.
  ParallelConfig whole = c;
  whole.recompute = RecomputeChoice::kFull;
  for (const StageReport& s : p.suggested.stages) whole.stage_layers.push_back(s.layers);
  const PlanOutcome all_full = plan_for("llama2-13b", whole);
  EXPECT_LT(p.suggested.iteration_s, all_full.uniform.iteration_s);
}

TEST(PlanRecompute, AnExplicitFullModeRecomputesEveryLayerOfEveryStage) {
  ParallelConfig c = pipeline(8, 1, 8, 64);
  c.recompute = RecomputeChoice::kFull;
  const PlanOutcome p = plan_for("llama2-13b", c);
  for (const StageReport& s : p.suggested.stages) EXPECT_EQ(s.full_recompute_layers, s.layers);
}

}  // namespace
}  // namespace pipescope::planner
