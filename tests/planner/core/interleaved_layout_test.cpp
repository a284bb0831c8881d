// The interleaved layout search (interleaved_layout.h): what it prices is what the plan reports,
// the exhaustive search against brute force, the descent within its bound of the optimum, and a
// layout that fits where Megatron-LM's uniform chunks do not.
#include "pipescope/planner/interleaved_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <tuple>
#include <vector>

#include "pipescope/models/model_catalog.h"

#include "pipescope/planner/plan.h"
#include "planner_fixture.h"

namespace pipescope::planner {
namespace {

struct Instance {
  PlanInputs in;
  CostModel costs;
  ScheduleSpec spec;
};

// llama2-7b's layers cut to `layers`, on p stages of v chunks (one GPU each), no recomputation.
Instance instance(int64_t layers, int64_t p, int64_t v, int64_t gbs) {
  Instance x;
  auto model = models::load_model("llama2-7b");
  auto cluster = load_cluster("dgx-a100");
  EXPECT_TRUE(model.ok() && cluster.ok());
  model->num_layers = layers;
  ParallelConfig c;
  c.gpus = p;
  c.pp = p;
  c.vpp = v;
  c.schedule = ScheduleKind::kInterleaved;
  c.global_batch = gbs;
  c.seq_length = 4096;
  c.chunk_layers = balanced_layout(layers, static_cast<int>(p * v));
  auto resolved = resolve_config(*model, c);
  EXPECT_TRUE(resolved.ok()) << resolved.error().message;
  auto profile = profile_for_gpu(cluster->gpu);
  x.in = {*model, *cluster, *profile, *resolved};
  auto costs = build_cost_model(x.in);
  EXPECT_TRUE(costs.ok());
  x.costs = *costs;
  x.spec = {ScheduleKind::kInterleaved, static_cast<int>(p), static_cast<int>(x.in.config.micro_batches()),
            static_cast<int>(v)};
  return x;
}

// Every layout of `layers` over `chunks`, in any order.
void each_layout(int64_t layers, int chunks, const std::function<void(const std::vector<int64_t>&)>& visit) {
  std::vector<int64_t> layout(static_cast<size_t>(chunks), 0);
  std::function<void(int, int64_t)> rec = [&](int g, int64_t left) {
    if (g == chunks - 1) {
      layout[static_cast<size_t>(g)] = left;
      visit(layout);
      return;
    }
    for (int64_t n = 0; n <= left; ++n) {
      layout[static_cast<size_t>(g)] = n;
      rec(g + 1, left - n);
    }
  };
  rec(0, layers);
}

TEST(InterleavedLayout, PricesWhatThePlanReports) {
  Instance x = instance(12, 2, 2, 16);
  auto evaluator = LayoutEvaluator::make(x.costs, x.spec, 0);
  ASSERT_TRUE(evaluator.ok());
  x.in.config.chunk_layers = {1, 5, 4, 2};
  auto plan = make_plan(x.in);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const std::vector<int64_t> peaks = evaluator->stage_peaks({1, 5, 4, 2});
  ASSERT_EQ(plan->uniform.stages.size(), 2u);  // the given layout is the baseline
  for (size_t s = 0; s < 2; ++s) EXPECT_EQ(peaks[s], plan->uniform.stages[s].peak_memory_bytes) << s;
  auto t = evaluator->pipeline_s({1, 5, 4, 2});
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(*t, plan->uniform.pipeline_s);
}

TEST(InterleavedLayout, ExhaustiveSearchIsTheBruteForceOptimumAndTheDescentStaysWithinItsBound) {
  for (const auto& [layers, p, v, gbs] :
       {std::tuple{12, 2, 2, 16}, std::tuple{9, 3, 2, 12}, std::tuple{14, 2, 3, 8}}) {
    Instance x = instance(layers, p, v, gbs);
    auto evaluator = LayoutEvaluator::make(x.costs, x.spec, 0);
    ASSERT_TRUE(evaluator.ok());
    const int chunks = static_cast<int>(p * v);
    const std::vector<int64_t> start = balanced_layout(layers, chunks);
    const double limit = *evaluator->pipeline_s(start) * 1.02;
    // Brute force: the least worst-stage peak within the limit.
    int64_t optimum = INT64_MAX;
    each_layout(layers, chunks, [&](const std::vector<int64_t>& layout) {
      const std::vector<int64_t> peaks = evaluator->stage_peaks(layout);
      const int64_t peak = *std::max_element(peaks.begin(), peaks.end());
      if (peak < optimum && *evaluator->pipeline_s(layout) <= limit) optimum = peak;
    });
    auto exact = search_layout(*evaluator, start, limit);
    ASSERT_TRUE(exact.ok());
    EXPECT_TRUE(exact->exhaustive);
    EXPECT_EQ(exact->peak_memory_bytes, optimum) << layers << " layers, " << p << " x " << v;
    EXPECT_LE(exact->pipeline_s, limit);
    EXPECT_LE(evaluator->peak_lower_bound(), optimum);

    auto descent = search_layout(*evaluator, start, limit, /*max_exhaustive=*/0);
    ASSERT_TRUE(descent.ok());
    EXPECT_FALSE(descent->exhaustive);
    EXPECT_GE(descent->peak_memory_bytes, optimum);
    EXPECT_LE(descent->lower_bound_bytes, optimum);
    EXPECT_LE(descent->pipeline_s, limit * (1 + 1e-12));
    const std::vector<int64_t> peaks = evaluator->stage_peaks(descent->chunk_layers);
    EXPECT_EQ(*std::max_element(peaks.begin(), peaks.end()), descent->peak_memory_bytes);
    const std::vector<int64_t> start_peaks = evaluator->stage_peaks(start);
    EXPECT_LE(descent->peak_memory_bytes, *std::max_element(start_peaks.begin(), start_peaks.end()));
    int64_t total = 0;
    for (int64_t n : descent->chunk_layers) total += n;
    EXPECT_EQ(total, layers);
  }
}

// llama3-70b on 32 H100s, tp 4, pp 8, vpp 5, 4,096 tokens, no recomputation: Megatron-LM's
// uniform chunks need more than the usable memory; the suggested layout fits, as fast.
TEST(InterleavedLayout, ALayoutFitsWhereTheUniformChunksDoNot) {
  ParallelConfig c;
  c.gpus = 32;
  c.tp = 4;
  c.pp = 8;
  c.vpp = 5;
  c.schedule = ScheduleKind::kInterleaved;
  c.seq_length = 4096;
  c.global_batch = 64;
  c.sequence_parallel = true;
  auto plan = make_plan(test::inputs("llama3-70b", "dgx-h100", c));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_FALSE(plan->uniform.fits);
  EXPECT_TRUE(plan->suggested.fits);
  ASSERT_TRUE(plan->layout_search.has_value());
  EXPECT_LE(plan->suggested.pipeline_s, plan->layout_search->time_limit_s);
  EXPECT_LE(plan->suggested.pipeline_s, plan->uniform.pipeline_s * 1.02);
  EXPECT_LE(plan->layout_search->lower_bound_bytes, plan->suggested.peak_memory_bytes);
  EXPECT_GT(plan->optimality_gap, 0);
  EXPECT_LT(plan->optimality_gap, 0.2);
  int layers = 0;
  for (const StageReport& s : plan->suggested.stages) {
    ASSERT_EQ(s.chunk_layers.size(), 5u);
    for (int n : s.chunk_layers) layers += n;
  }
  EXPECT_EQ(layers, 80);
}

}  // namespace
}  // namespace pipescope::planner
