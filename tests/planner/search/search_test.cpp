// search() as a user reads it: the feasible set of a tiny model worked out by hand, refusals that
// name their cause, a ranking by throughput of plans that fit, the figures `pipescope plan` gives
// for the same configuration, and a top-N that is exactly the head of the full ranking.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/plan.h"
#include "pipescope/planner/search.h"
#include "screening_costs.h"
#include "search_test_support.h"

namespace pipescope::planner {
namespace {

SearchResult run(const SearchRequest& r) {
  auto result = search(r);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.ok() ? *result : SearchResult{};
}

int64_t configs_for(const SearchResult& r, const std::string& reason) {
  for (const Rejection& j : r.rejected) {
    if (j.reason == reason) return j.configs;
  }
  return 0;
}

// The tiny model on 8 GPUs in nodes of 4, one micro-batch size, schedule, recompute mode and
// ZeRO stage, so that each (tp, pp) is one configuration. TP runs over the divisors of 8:
//   tp 8            more than a node of 4                     1 configuration (pp 1)
//   tp 4            does not divide 6 heads                   2 (pp 1, 2)
//   tp 2            pp 1, 2, 4 fit                            3
//   tp 1            pp 1, 2, 4 fit; pp 8 > 4 layers           3 + 1
SearchRequest tiny_request() {
  SearchRequest r;
  r.model = test::tiny_model();
  auto cluster = make_gpu_cluster("a100-80gb", 4);
  EXPECT_TRUE(cluster.ok());
  r.cluster = *cluster;
  r.profile = *profile_for_gpu(r.cluster.gpu);
  r.gpus = 8;
  r.global_batch = 8;
  r.seq_length = 128;
  r.top = 0;
  r.constraints.micro_batches = {1};
  r.constraints.schedules = {ScheduleKind::kOneFOneB};
  r.constraints.recompute = {RecomputeChoice::kNone};
  r.constraints.zero_stages = {0};
  return r;
}

TEST(Search, TinyModelFeasibleSetIsTheOneWorkedOutByHand) {
  const SearchResult r = run(tiny_request());
  EXPECT_EQ(r.stats.candidates, 10);
  EXPECT_EQ(r.stats.feasible, 6);
  EXPECT_EQ(r.stats.rejected, 4);
  std::set<std::pair<int64_t, int64_t>> layouts;
  for (const RankedPlan& p : r.ranked) layouts.insert({p.config.tp, p.config.pp});
  EXPECT_EQ(layouts, (std::set<std::pair<int64_t, int64_t>>{{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {2, 4}}));
}

TEST(Search, RejectionsNameTheirCauseOncePerReasonWithTheirCount) {
  const SearchResult r = run(tiny_request());
  ASSERT_EQ(r.rejected.size(), 3u);
  EXPECT_EQ(configs_for(r, "tp 8 exceeds the 4 GPUs of a node (tensor parallelism stays on NVLink)"), 1);
  EXPECT_EQ(configs_for(
                r, "model 'tiny': num_attention_heads (6) is not divisible by the tensor parallel size (4)"),
            2);
  EXPECT_EQ(configs_for(r, "--pp 8 is more pipeline stages than the model's 4 layers"), 1);
}

TEST(Search, EveryConfigurationIsRankedRefusedOrADuplicate) {
  SearchRequest request = tiny_request();
  request.constraints = SearchConstraints{};
  const SearchResult r = run(request);
  int64_t refused = 0;
  for (const Rejection& j : r.rejected) refused += j.configs;
  EXPECT_EQ(refused, r.stats.rejected);
  EXPECT_EQ(r.stats.candidates, r.stats.feasible + r.stats.duplicates + r.stats.rejected);
  EXPECT_EQ(static_cast<int64_t>(r.ranked.size()), r.stats.feasible);  // top 0: all of them
}

TEST(Search, AutoRecomputeThatKeepsEverythingIsTheSamePlanAsNone) {
  // The tiny model fits everywhere without recomputation, so auto chooses none on every stage.
  SearchRequest request = tiny_request();
  request.constraints.recompute = {RecomputeChoice::kNone, RecomputeChoice::kAuto};
  const SearchResult r = run(request);
  EXPECT_EQ(r.stats.duplicates, 6);
  EXPECT_EQ(r.stats.feasible, 6);
  for (const RankedPlan& p : r.ranked) EXPECT_EQ(p.config.recompute, RecomputeChoice::kNone);
}

TEST(Search, RankedByThroughputAndEveryRankedPlanFits) {
  const SearchResult r = run(test::request("llama2-13b", "dgx-a100", 32, 128, 4096));
  ASSERT_EQ(r.ranked.size(), 20u);
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const RankedPlan& p = r.ranked[i];
    EXPECT_TRUE(p.fits);
    EXPECT_LE(p.peak_memory_bytes, r.capacity_bytes);
    EXPECT_NEAR(p.tokens_per_s, 128.0 * 4096 / p.iteration_s, 1e-6 * p.tokens_per_s);
    if (i > 0) {
      EXPECT_GE(r.ranked[i - 1].tokens_per_s, p.tokens_per_s);
    }
    EXPECT_TRUE(p.config.tp == 1 || p.config.sequence_parallel);
  }
}

TEST(Search, TopNIsTheHeadOfTheFullRanking) {
  SearchRequest request = test::request("llama2-7b", "dgx-h100", 32, 128, 4096);
  request.top = 0;
  const SearchResult all = run(request);
  request.top = 12;
  const SearchResult few = run(request);
  ASSERT_EQ(few.ranked.size(), 12u);
  EXPECT_LT(few.stats.exact_plans, all.stats.exact_plans / 10);
  for (size_t i = 0; i < few.ranked.size(); ++i) {
    EXPECT_EQ(few.ranked[i].iteration_s, all.ranked[i].iteration_s) << i;
    EXPECT_EQ(describe(few.ranked[i].config), describe(all.ranked[i].config)) << i;
  }
}

TEST(Search, FiguresAreThoseOfPlanForTheSameConfiguration) {
  SearchRequest request = test::request("llama2-7b", "dgx-a100", 16, 64, 4096);
  request.top = 0;
  const SearchResult r = run(request);
  int compared_1f1b = 0, compared_interleaved = 0;
  for (const RankedPlan& p : r.ranked) {
    if (!p.uniform_fits || p.config.pp > 4) continue;
    const bool interleaved = p.config.schedule == ScheduleKind::kInterleaved;
    if ((interleaved ? compared_interleaved : compared_1f1b) >= 3) continue;
    auto plan = make_plan(PlanInputs{request.model, request.cluster, request.profile, p.config});
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const PlanReport& u = plan->uniform;
    EXPECT_DOUBLE_EQ(p.iteration_s, u.iteration_s) << describe(p.config);
    EXPECT_EQ(p.peak_memory_bytes, u.peak_memory_bytes) << describe(p.config);
    EXPECT_DOUBLE_EQ(p.tokens_per_s, u.tokens_per_s);
    EXPECT_DOUBLE_EQ(p.mfu, u.mfu);
    EXPECT_DOUBLE_EQ(p.tflops_per_gpu, u.tflops_per_gpu);
    (interleaved ? compared_interleaved : compared_1f1b)++;
  }
  EXPECT_EQ(compared_1f1b, 3);
  EXPECT_EQ(compared_interleaved, 3);
}

TEST(Search, InternEvoRecipeSearchesZeroOneInShardGroupsWithPlansFigures) {
  // HybridZeroOptimizer shards the optimizer state only: ZeRO 0 or 1, within zero1 groups or over
  // all of DP; its per-stage broadcast latencies reach the ranking as they reach `plan`. zero1.fsdp
  // (ZeRO 3) runs without a pipeline only.
  SearchRequest request = test::request("llama2-7b", "dgx-a100", 32, 128, 4096);
  request.optimizer = OptimizerRecipe::kInternEvo;
  request.top = 0;
  const SearchResult r = run(request);
  ASSERT_FALSE(r.ranked.empty());
  bool in_groups = false;
  int compared = 0;
  bool fsdp = false;
  for (const RankedPlan& p : r.ranked) {
    EXPECT_NE(p.config.zero_stage, 2) << describe(p.config);
    if (p.config.zero_stage == 3) {
      EXPECT_EQ(p.config.pp, 1) << describe(p.config);
      fsdp = true;
    }
    EXPECT_EQ(p.config.optimizer, OptimizerRecipe::kInternEvo);
    in_groups = in_groups || p.config.zero_shard > 0;
    if (compared >= 4 || !p.uniform_fits || p.config.zero_stage != 1 || p.config.pp > 2) continue;
    auto plan = make_plan(PlanInputs{request.model, request.cluster, request.profile, p.config});
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_DOUBLE_EQ(p.iteration_s, plan->uniform.iteration_s) << describe(p.config);
    EXPECT_EQ(p.peak_memory_bytes, plan->uniform.peak_memory_bytes) << describe(p.config);
    ++compared;
  }
  EXPECT_TRUE(in_groups);
  EXPECT_TRUE(fsdp);
  EXPECT_EQ(compared, 4);

  request.constraints.zero_stages = {2};
  auto refused = search(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--optimizer internevo"), std::string::npos);
  // Pinned to ZeRO 3 with a pipeline, every layout is refused for the reason resolve_config gives.
  request.constraints.zero_stages = {3};
  request.constraints.pp = 2;
  const SearchResult piped = run(request);
  EXPECT_TRUE(piped.ranked.empty());
  bool said = false;
  for (const auto& reason : piped.rejected)
    said = said || reason.reason.find("refuses pipeline parallelism") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Search, ABalancedSplitRescuesWhatTheUniformSplitCannotHold) {
  // 1F1B's first stage holds p micro-batches: on 64 GPUs some layouts only fit once layers move
  // off the first stages.
  SearchRequest request = test::request("llama2-7b", "dgx-a100", 64, 256, 4096);
  request.top = 0;
  const SearchResult r = run(request);
  const auto balanced =
      std::find_if(r.ranked.begin(), r.ranked.end(), [](const RankedPlan& p) { return !p.uniform_fits; });
  ASSERT_NE(balanced, r.ranked.end());
  EXPECT_TRUE(balanced->fits);
  EXPECT_GT(balanced->uniform_peak_memory_bytes, r.capacity_bytes);
  EXPECT_LE(balanced->peak_memory_bytes, r.capacity_bytes);
  int64_t layers = 0;
  for (int64_t l : balanced->stage_layers) layers += l;
  EXPECT_EQ(layers, 32);
  EXPECT_EQ(balanced->stage_layers.size(), static_cast<size_t>(balanced->config.pp));
  // The first stage, holding the most micro-batches, gives layers away.
  EXPECT_LT(balanced->stage_layers.front(), balanced->stage_layers.back() + 1);
}

TEST(Search, NothingFeasibleIsAnAnswerWithItsReasons) {
  const SearchResult r = run(test::request("gpt3-175b", "dgx-a100", 8, 64, 2048));
  EXPECT_TRUE(r.ranked.empty());
  EXPECT_EQ(r.stats.feasible, 0);
  EXPECT_EQ(r.stats.candidates, r.stats.rejected);
  ASSERT_FALSE(r.rejected.empty());
  for (const Rejection& j : r.rejected)
    EXPECT_NE(j.reason.find("out of memory"), std::string::npos) << j.reason;
}

TEST(Search, RefusesARequestItCannotSearch) {
  SearchRequest request = tiny_request();
  request.global_batch = 0;
  auto no_batch = search(request);
  ASSERT_FALSE(no_batch.ok());
  EXPECT_NE(no_batch.error().message.find("--gbs"), std::string::npos);

  request = tiny_request();
  request.constraints.schedules.clear();
  EXPECT_FALSE(search(request).ok());

  request = tiny_request();
  request.constraints.zero_stages = {4};
  EXPECT_FALSE(search(request).ok());

  request = tiny_request();
  request.profile = *profile_for_gpu(*find_gpu("h100-80gb"));
  auto mismatch = search(request);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.error().message.find("h100"), std::string::npos) << mismatch.error().message;
}

// The screening costs price one layer per kind; expanded, they must be the full cost model's.
void expect_expansion_matches(const models::ModelDesc& model, const ParallelConfig& config) {
  auto cluster = load_cluster("dgx-h100");
  ASSERT_TRUE(cluster.ok());
  const CalibrationProfile profile = *profile_for_gpu(cluster->gpu);
  auto resolved = resolve_config(model, config);
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  const PlanInputs full{model, *cluster, profile, *resolved};
  const CostModel costs = *build_cost_model(full);
  const PartitionProblem problem = partition_problem(full, costs);
  auto screening = search_detail::screening_costs(
      PlanInputs{search_detail::reduced_model(model), *cluster, profile, *resolved});
  ASSERT_TRUE(screening.ok()) << screening.error().message;
  EXPECT_EQ(screening->extra_bytes, costs.fixed_bytes);
  EXPECT_EQ(screening->capacity_bytes, costs.capacity_bytes);
  EXPECT_EQ(screening->p2p_s, costs.p2p_s);
  const size_t n = costs.units.size();
  for (size_t u = 0; u < n; ++u) {
    const search_detail::UnitPrice& price = u == 0       ? screening->embedding
                                            : u + 1 == n ? screening->head
                                                         : screening->layer(static_cast<int64_t>(u) - 1);
    EXPECT_EQ(price.static_bytes, problem.units[u].static_bytes) << costs.units[u].name;
    EXPECT_EQ(price.step_bytes, problem.units[u].step_bytes) << costs.units[u].name;
    EXPECT_EQ(price.dp_sync_s, costs.units[u].dp_sync_s) << costs.units[u].name;
    EXPECT_EQ(price.optimizer_s, costs.units[u].optimizer_s) << costs.units[u].name;
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_EQ(price.modes[r].forward_s, problem.units[u].options[r].forward_s) << costs.units[u].name;
      EXPECT_EQ(price.modes[r].backward_s, problem.units[u].options[r].backward_s) << costs.units[u].name;
      EXPECT_EQ(price.modes[r].activation_bytes, problem.units[u].options[r].activation_bytes);
      EXPECT_EQ(price.modes[r].transient_bytes, problem.units[u].options[r].transient_bytes);
    }
  }
}

ParallelConfig layout(int64_t gpus, int64_t tp, int64_t pp, int64_t ep, int zero, int64_t shard) {
  ParallelConfig c;
  c.gpus = gpus;
  c.tp = tp;
  c.pp = pp;
  c.ep = ep;
  c.micro_batch = 2;
  c.global_batch = 256;
  c.seq_length = 4096;
  c.zero_stage = zero;
  c.zero_shard = shard;
  c.sequence_parallel = tp > 1;
  return c;
}

TEST(ScreeningCosts, ExpandToTheFullCostModel) {
  const models::ModelDesc dense = *models::load_model("llama2-7b");
  expect_expansion_matches(dense, layout(64, 2, 4, 1, 1, 0));
  expect_expansion_matches(dense, layout(64, 1, 2, 1, 3, 4));
  for (OptimizerRecipe recipe : {OptimizerRecipe::kDeepSpeedBf16, OptimizerRecipe::kInternEvo}) {
    ParallelConfig c = layout(64, 2, 4, 1, 1, 0);
    c.optimizer = recipe;  // with the optimizer step's working memory
    expect_expansion_matches(dense, c);
  }
  models::ModelDesc moe = *models::load_model("mixtral-8x7b");
  expect_expansion_matches(moe, layout(64, 2, 2, 4, 2, 0));
  moe.moe.layer_frequency = 2;  // dense and MoE layers alternate: two kinds
  EXPECT_EQ(search_detail::layer_period(moe), 2);
  expect_expansion_matches(moe, layout(64, 2, 2, 4, 1, 8));
}

}  // namespace
}  // namespace pipescope::planner
