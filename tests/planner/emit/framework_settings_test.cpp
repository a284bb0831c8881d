// Framework settings for small hand-made plans, with the expected flags and keys written out by
// hand from each framework's documented meaning; and a real plan whose Megatron-LM layout string,
// expanded by Megatron's grammar, gives back the planned split.
#include "pipescope/planner/framework_settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/cluster.h"

namespace pipescope::planner {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 16 GPUs: tp 2, pp 4, dp 2; gbs 32 with mbs 1 is 16 micro-batches per DP rank.
ParallelConfig small_config() {
  ParallelConfig c;
  c.gpus = 16;
  c.tp = 2;
  c.pp = 4;
  c.micro_batch = 1;
  c.global_batch = 32;
  c.seq_length = 4096;
  c.zero_stage = 1;
  c.sequence_parallel = true;
  return c;
}

// The same, priced with InternEvo's own optimizer recipe.
ParallelConfig internevo_config() {
  ParallelConfig c = small_config();
  c.optimizer = OptimizerRecipe::kInternEvo;
  return c;
}

models::ModelDesc model_with_layers(int64_t layers) {
  models::ModelDesc m;
  m.name = "tiny";
  m.num_layers = layers;
  return m;
}

// Units: the embedding, the decoder layers, the head; stage s takes layers[s] of the layers.
PlanOutcome outcome_with(const ParallelConfig& c, const std::vector<int>& layers,
                         const std::vector<std::string>& recompute) {
  PlanOutcome o;
  o.config = c;
  int unit = 0;
  for (size_t s = 0; s < layers.size(); ++s) {
    StageReport st;
    st.index = static_cast<int>(s);
    st.first_unit = unit;
    unit += layers[s] + (s == 0 ? 1 : 0) + (s + 1 == layers.size() ? 1 : 0);
    st.end_unit = unit;
    st.layers = layers[s];
    st.recompute = recompute[s];
    o.suggested.stages.push_back(st);
  }
  o.uniform = o.suggested;
  return o;
}

TEST(Megatron, ParallelAndBatchFlags) {
  const auto s = emit_megatron(model_with_layers(16),
                               outcome_with(small_config(), {4, 4, 4, 4}, {"none", "none", "none", "none"}));
  for (const char* flag :
       {"--num-layers 16\n", "--tensor-model-parallel-size 2\n", "--pipeline-model-parallel-size 4\n",
        "--sequence-parallel\n", "--micro-batch-size 1\n", "--global-batch-size 32\n", "--seq-length 4096\n",
        "--use-distributed-optimizer\n", "--overlap-grad-reduce\n", "--overlap-param-gather\n"}) {
    EXPECT_THAT(s.text, HasSubstr(flag));
  }
  EXPECT_THAT(s.text, Not(HasSubstr("--recompute")));
  EXPECT_THAT(s.text, Not(HasSubstr("pipeline-num-layers")));
  EXPECT_THAT(s.text, Not(HasSubstr("--pipeline-model-parallel-layout")));
  EXPECT_TRUE(s.not_expressible.empty());
}

TEST(Megatron, OverlapFlagsOnlyWithDataParallelismAndFsdpItsRequiredFlags) {
  // The plan hides the gradient sync behind the backward; Megatron-LM's defaults do not, so the
  // flags come with any data parallelism, the weight gather's with sharded states only.
  const std::vector<std::string> none(4, "none");
  ParallelConfig c = small_config();
  c.zero_stage = 0;
  auto s = emit_megatron(model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, none));
  EXPECT_THAT(s.text, HasSubstr("--overlap-grad-reduce\n"));
  EXPECT_THAT(s.text, Not(HasSubstr("--overlap-param-gather")));
  EXPECT_THAT(s.text, Not(HasSubstr("--use-distributed-optimizer")));
  // A plan whose framework syncs after the backward does not ask Megatron-LM to overlap it.
  c.framework = TrainingFramework::kMegatron2022;
  s = emit_megatron(model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, none));
  EXPECT_THAT(s.text, Not(HasSubstr("--overlap-grad-reduce")));
  c.framework = TrainingFramework::kGeneric;
  c.grad_sync = GradSync::kAfterBackward;
  s = emit_megatron(model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, none));
  EXPECT_THAT(s.text, Not(HasSubstr("--overlap-grad-reduce")));
  c.grad_sync = GradSync::kFrameworkDefault;
  c.gpus = 8;  // dp 1: nothing to overlap
  s = emit_megatron(model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, none));
  EXPECT_THAT(s.text, Not(HasSubstr("--overlap")));
  c = small_config();
  c.pp = 1;
  c.gpus = 8;  // dp 4
  c.zero_stage = 3;
  s = emit_megatron(model_with_layers(16), outcome_with(c, {16}, {"none"}));
  for (const char* flag :
       {"--use-megatron-fsdp\n", "--data-parallel-sharding-strategy optim_grads_params\n",
        "--use-distributed-optimizer\n", "--no-gradient-accumulation-fusion\n",
        "--ckpt-format fsdp_dtensor\n", "--overlap-grad-reduce\n", "--overlap-param-gather\n"}) {
    EXPECT_THAT(s.text, HasSubstr(flag));
  }
}

TEST(Megatron, EvenMiddleStagesUseFirstAndLastStageFlags) {
  const auto s = emit_megatron(model_with_layers(16),
                               outcome_with(small_config(), {2, 5, 5, 4}, {"full", "full", "full", "full"}));
  EXPECT_THAT(s.text, HasSubstr("--decoder-first-pipeline-num-layers 2\n"));
  EXPECT_THAT(s.text, HasSubstr("--decoder-last-pipeline-num-layers 4\n"));
  EXPECT_THAT(s.text, Not(HasSubstr("--pipeline-model-parallel-layout")));
  EXPECT_THAT(
      s.text,
      HasSubstr("--recompute-granularity full\n  --recompute-method uniform\n  --recompute-num-layers 1\n"));
}

TEST(Megatron, UnevenMiddleStagesUseTheLayoutStringAndNameTheClosestFirstLastSplit) {
  const auto s = emit_megatron(
      model_with_layers(16),
      outcome_with(small_config(), {3, 5, 4, 4}, {"selective", "selective", "selective", "selective"}));
  EXPECT_THAT(s.text, HasSubstr("--pipeline-model-parallel-layout \"Et*3|t*5|t*4|t*4L\"\n"));
  EXPECT_THAT(s.text, HasSubstr("cannot express"));
  EXPECT_THAT(s.text, HasSubstr("closest first/last split"));
  EXPECT_THAT(s.text, HasSubstr("--recompute-granularity selective\n"));
  EXPECT_THAT(s.text, Not(HasSubstr("--recompute-method")));
}

TEST(Megatron, PerStageRecomputeIsNotExpressibleAndFallsBackToTheStrongest) {
  const auto s = emit_megatron(model_with_layers(16),
                               outcome_with(small_config(), {4, 4, 4, 4}, {"full", "full", "none", "none"}));
  EXPECT_THAT(s.text, HasSubstr("--recompute-granularity full\n"));
  ASSERT_EQ(s.not_expressible.size(), 1u);
  EXPECT_THAT(s.not_expressible[0], HasSubstr("stages 0-1 full, stages 2-3 none"));
  EXPECT_THAT(s.not_expressible[0], HasSubstr("--recompute-num-layers"));
  EXPECT_THAT(s.text, HasSubstr("# Not expressible in Megatron-LM:"));
}

TEST(Megatron, TheSameRecomputedLayerCountOnEveryStageIsTheBlockMethod) {
  // Every stage recomputes its first 2 layers fully: --recompute-method block, exactly.
  PlanOutcome o = outcome_with(small_config(), {4, 4, 4, 4}, {"full", "full", "full", "full"});
  for (StageReport& st : o.suggested.stages) st.full_recompute_layers = 2;
  auto s = emit_megatron(model_with_layers(16), o);
  EXPECT_THAT(s.text, HasSubstr("--recompute-method block\n"));
  EXPECT_THAT(s.text, HasSubstr("--recompute-num-layers 2\n"));
  EXPECT_TRUE(s.not_expressible.empty());
  // Different counts per stage have no flag: the largest count on every stage, said so.
  o.suggested.stages[3].full_recompute_layers = 1;
  s = emit_megatron(model_with_layers(16), o);
  EXPECT_THAT(s.text, HasSubstr("--recompute-method block\n"));
  EXPECT_THAT(s.text, HasSubstr("--recompute-num-layers 2\n"));
  ASSERT_EQ(s.not_expressible.size(), 1u);
  EXPECT_THAT(s.not_expressible[0], HasSubstr("stages 0-2 full 2/4, stage 3 full 1/4"));
  EXPECT_THAT(s.not_expressible[0], HasSubstr("first 2 layers on every stage"));
}

TEST(Megatron, StagesKeepingAllOrRecomputingTheirFirstLayersFallBackToTheLargestBlock) {
  // full 3/4, full 1/4, none, none: block recomputation of 3 layers everywhere keeps no stage
  // above its plan and recomputes less than every layer.
  PlanOutcome o = outcome_with(small_config(), {4, 4, 4, 4}, {"full", "full", "none", "none"});
  o.suggested.stages[0].full_recompute_layers = 3;
  o.suggested.stages[1].full_recompute_layers = 1;
  auto s = emit_megatron(model_with_layers(16), o);
  EXPECT_THAT(s.text, HasSubstr("--recompute-method block\n"));
  EXPECT_THAT(s.text, HasSubstr("--recompute-num-layers 3\n"));
  ASSERT_EQ(s.not_expressible.size(), 1u);
  EXPECT_THAT(s.not_expressible[0], HasSubstr("stage 0 full 3/4, stage 1 full 1/4, stages 2-3 none"));
  // A stage on selective recomputation has no block equivalent: every layer of every stage.
  o.suggested.stages[2].recompute = "selective";
  s = emit_megatron(model_with_layers(16), o);
  EXPECT_THAT(s.text, HasSubstr("--recompute-method uniform\n"));
}

TEST(Megatron, InterleavedGivesLayersPerVirtualStage) {
  ParallelConfig c = small_config();
  c.vpp = 2;
  c.schedule = ScheduleKind::kInterleaved;
  const auto s =
      emit_megatron(model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, {"none", "none", "none", "none"}));
  EXPECT_THAT(s.text, HasSubstr("--num-layers-per-virtual-pipeline-stage 2\n"));  // 16 / (4 x 2)
  // Uneven chunks are a layout: chunk g on stage g mod 4.
  PlanOutcome uneven = outcome_with(c, {4, 4, 4, 4}, {"none", "none", "none", "none"});
  const std::vector<std::vector<int>> stage_chunks = {{1, 3}, {2, 2}, {2, 2}, {2, 2}};
  for (size_t st = 0; st < 4; ++st) uneven.suggested.stages[st].chunk_layers = stage_chunks[st];
  const auto laid_out = emit_megatron(model_with_layers(16), uneven);
  EXPECT_THAT(laid_out.text, HasSubstr("--pipeline-model-parallel-layout \"Et|(t*2|)*3t*3|t*2|t*2|t*2L\"\n"));
  EXPECT_THAT(laid_out.text, Not(HasSubstr("--num-layers-per-virtual-pipeline-stage")));
  // Rounds that differ (1 then 3 on stage 0) have no uneven-split flags.
  EXPECT_THAT(laid_out.text, Not(HasSubstr("--decoder-first-pipeline-num-layers")));
}

// A lighter first stage in every round: the layout, and the older flags that say the same.
TEST(Megatron, AnInterleavedLayoutAlikeInEveryRoundAlsoHasTheUnevenSplitFlags) {
  ParallelConfig c = small_config();
  c.vpp = 2;
  c.schedule = ScheduleKind::kInterleaved;
  PlanOutcome o = outcome_with(c, {2, 4, 4, 6}, {"none", "none", "none", "none"});
  const std::vector<std::vector<int>> stage_chunks = {{1, 1}, {2, 2}, {2, 2}, {3, 3}};
  for (size_t st = 0; st < 4; ++st) o.suggested.stages[st].chunk_layers = stage_chunks[st];
  const auto s = emit_megatron(model_with_layers(16), o);
  EXPECT_THAT(s.text, HasSubstr("--pipeline-model-parallel-layout \"Et|t*2|t*2|t*3|t|t*2|t*2|t*3L\"\n"));
  EXPECT_THAT(s.text,
              HasSubstr("--num-virtual-stages-per-pipeline-rank 2 --decoder-first-pipeline-num-layers 2"));
  EXPECT_THAT(s.text, HasSubstr("--decoder-last-pipeline-num-layers 6."));
  EXPECT_THAT(s.text, HasSubstr("Megatron-LM expresses all of this plan."));
}

TEST(Megatron, HierarchicalZeroOneIsDistributedOptimizerInstances) {
  ParallelConfig c = small_config();
  c.gpus = 64;  // dp 8
  c.global_batch = 64;
  c.zero_shard = 2;
  const auto s =
      emit_megatron(model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, {"none", "none", "none", "none"}));
  EXPECT_THAT(s.text, HasSubstr("--num-distributed-optimizer-instances 4\n"));  // 8 DP ranks / groups of 2
}

TEST(DeepSpeed, ConfigAndExplicitParts) {
  ParallelConfig c = small_config();
  c.zero_stage = 2;
  const auto s =
      emit_deepspeed(model_with_layers(16), outcome_with(c, {3, 5, 4, 4}, {"full", "full", "full", "full"}));
  EXPECT_THAT(s.text, HasSubstr("\"train_batch_size\": 32,"));
  EXPECT_THAT(s.text, HasSubstr("\"train_micro_batch_size_per_gpu\": 1,"));
  EXPECT_THAT(s.text, HasSubstr("\"gradient_accumulation_steps\": 16,"));
  // ZeRO-2 is refused with pipeline parallelism: stage 1, said so.
  EXPECT_THAT(s.text, HasSubstr("\"zero_optimization\": {\"stage\": 1}"));
  EXPECT_THAT(s.text, HasSubstr("ZeRO-2 with pipeline parallelism"));
  // Layer specs [embedding, 16 layers, head]: stage 0 = embedding + 3, then 5, 4, 4 + head.
  EXPECT_THAT(s.text, HasSubstr("PARTS = [0, 4, 9, 13, 18]"));
  EXPECT_THAT(s.text, HasSubstr("PipeModelDataParallelTopology(num_pp=4, num_mp=2, num_dp=2)"));
  EXPECT_THAT(s.text, HasSubstr("activation_checkpoint_interval=1,"));
}

TEST(DeepSpeed, SelectiveRecomputeIsNotExpressible) {
  const auto s = emit_deepspeed(
      model_with_layers(16),
      outcome_with(small_config(), {4, 4, 4, 4}, {"selective", "selective", "selective", "selective"}));
  bool named = false;
  for (const auto& limit : s.not_expressible) named = named || limit.find("Selective") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(DeepSpeed, ZeroTwoAndThreeOverlapTheirGradientReduceAsPlanned) {
  ParallelConfig c = small_config();
  c.pp = 1;
  c.gpus = 8;  // dp 4
  c.zero_stage = 2;
  auto s = emit_deepspeed(model_with_layers(16), outcome_with(c, {16}, {"none"}));
  EXPECT_THAT(s.text, HasSubstr("\"zero_optimization\": {\"stage\": 2, \"overlap_comm\": true}"));
  c.zero_stage = 1;
  s = emit_deepspeed(model_with_layers(16), outcome_with(c, {16}, {"none"}));
  EXPECT_THAT(s.text, Not(HasSubstr("overlap_comm")));
}

TEST(DeepSpeed, SaysWhenThePlanIsPricedWithAnotherOptimizerRecipe) {
  // --emit writes settings only: a plan priced with Megatron-LM's recipe says how to price
  // DeepSpeed's BF16_Optimizer instead; one priced with it says nothing of the kind.
  const auto named = [](const FrameworkSettings& s) {
    bool found = false;
    for (const auto& limit : s.not_expressible)
      found = found || limit.find("--optimizer deepspeed-bf16") != std::string::npos;
    return found;
  };
  ParallelConfig c = small_config();
  const std::vector<std::string> none(4, "none");
  EXPECT_TRUE(named(emit_deepspeed(model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, none))));
  c.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  EXPECT_FALSE(named(emit_deepspeed(model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, none))));
}

TEST(Frameworks, SayWhenThePlanIsPricedWithAnotherOptimizerRecipeThanTheyRun) {
  // Each framework runs its own recipe; --emit names the --optimizer that prices it.
  const std::vector<std::string> none(4, "none");
  const auto limits_of = [&](Framework framework, OptimizerRecipe recipe) {
    ParallelConfig c = small_config();
    c.optimizer = recipe;
    std::string all;
    for (const auto& limit :
         emit_settings(framework, model_with_layers(16), outcome_with(c, {4, 4, 4, 4}, none)).not_expressible)
      all += limit + "\n";
    return all;
  };
  EXPECT_THAT(limits_of(Framework::kInternEvo, OptimizerRecipe::kMegatron),
              HasSubstr("--optimizer internevo"));
  EXPECT_THAT(limits_of(Framework::kInternEvo, OptimizerRecipe::kInternEvo), Not(HasSubstr("--optimizer")));
  EXPECT_THAT(limits_of(Framework::kMegatron, OptimizerRecipe::kInternEvo),
              HasSubstr("--optimizer megatron"));
  EXPECT_THAT(limits_of(Framework::kMegatron, OptimizerRecipe::kDeepSpeedBf16),
              HasSubstr("--optimizer megatron"));
  EXPECT_THAT(limits_of(Framework::kMegatron, OptimizerRecipe::kMegatron), Not(HasSubstr("--optimizer")));
  EXPECT_THAT(limits_of(Framework::kDeepSpeed, OptimizerRecipe::kInternEvo),
              HasSubstr("--optimizer deepspeed-bf16"));
  EXPECT_THAT(limits_of(Framework::kInternEvo, OptimizerRecipe::kMegatron),
              HasSubstr("4 + 12/g bytes per parameter"));
}

TEST(InternEvo, ConfigKeys) {
  const auto s = emit_internevo(model_with_layers(16), outcome_with(internevo_config(), {4, 4, 4, 4},
                                                                    {"full", "full", "full", "full"}));
  EXPECT_THAT(s.text, HasSubstr("seq_len=4096,"));
  EXPECT_THAT(s.text, HasSubstr("micro_bsz=1,"));
  EXPECT_THAT(s.text, HasSubstr("micro_num=16,"));
  EXPECT_THAT(s.text, HasSubstr("num_layers=16,"));
  EXPECT_THAT(s.text, HasSubstr("checkpoint=True,"));
  EXPECT_THAT(s.text, HasSubstr("zero1=dict(size=-1, fsdp=False)"));
  EXPECT_THAT(s.text, HasSubstr("tensor=dict(size=2, mode=\"msp\")"));
  EXPECT_THAT(s.text, HasSubstr("pipeline=dict(size=4, interleaved_overlap=True)"));
  EXPECT_TRUE(s.not_expressible.empty());
}

TEST(InternEvo, UnevenSplitIsNotExpressibleAndItsUniformSplitGivesTheRemainderToLaterStages) {
  // 18 layers on 4 stages: partition_uniform gives 4, 4, 5, 5.
  const auto s = emit_internevo(model_with_layers(18), outcome_with(internevo_config(), {3, 5, 5, 5},
                                                                    {"none", "none", "none", "none"}));
  ASSERT_EQ(s.not_expressible.size(), 1u);
  EXPECT_THAT(s.not_expressible[0], HasSubstr("partition_uniform"));
  EXPECT_THAT(s.not_expressible[0], HasSubstr("(4, 4, 5, 5)"));
  const auto same = emit_internevo(model_with_layers(18), outcome_with(internevo_config(), {4, 4, 5, 5},
                                                                       {"none", "none", "none", "none"}));
  EXPECT_TRUE(same.not_expressible.empty());
}

TEST(InternEvo, AnUnevenInterleavedLayoutIsNotExpressible) {
  ParallelConfig c = internevo_config();
  c.vpp = 2;
  c.schedule = ScheduleKind::kInterleaved;
  PlanOutcome uneven = outcome_with(c, {4, 4, 4, 4}, {"none", "none", "none", "none"});
  const std::vector<std::vector<int>> stage_chunks = {{1, 3}, {2, 2}, {2, 2}, {2, 2}};
  for (size_t st = 0; st < 4; ++st) uneven.suggested.stages[st].chunk_layers = stage_chunks[st];
  const auto s = emit_internevo(model_with_layers(16), uneven);
  ASSERT_FALSE(s.not_expressible.empty());
  EXPECT_THAT(s.not_expressible[0], HasSubstr("\"Et|(t*2|)*3t*3|t*2|t*2|t*2L\""));
  EXPECT_THAT(s.not_expressible[0], HasSubstr("num_chunks equal chunks"));
  PlanOutcome uniform = outcome_with(c, {4, 4, 4, 4}, {"none", "none", "none", "none"});
  for (auto& st : uniform.suggested.stages) st.chunk_layers = {2, 2};
  for (const std::string& note : emit_internevo(model_with_layers(16), uniform).not_expressible)
    EXPECT_THAT(note, Not(HasSubstr("layout")));
}

TEST(Frameworks, ParseTheEmitNames) {
  EXPECT_EQ(parse_framework("megatron"), Framework::kMegatron);
  EXPECT_EQ(parse_framework("deepspeed"), Framework::kDeepSpeed);
  EXPECT_EQ(parse_framework("internevo"), Framework::kInternEvo);
  EXPECT_FALSE(parse_framework("colossalai"));
}

// Megatron-LM's own expansion (pipeline_parallel_layer_layout.py): "(...)*n" then "x*n".
std::vector<int> decoder_layers_of(std::string layout) {
  layout = std::regex_replace(layout, std::regex(","), "");
  std::smatch m;
  for (const std::regex repeat(R"((.)\*(\d+))"); std::regex_search(layout, m, repeat);) {
    std::string run;
    for (int i = 0; i < std::stoi(m[2]); ++i) run += m[1].str();
    layout = m.prefix().str() + run + m.suffix().str();
  }
  std::vector<int> layers(1, 0);
  for (char ch : layout) {
    if (ch == '|') layers.push_back(0);
    if (ch == 't') ++layers.back();
  }
  return layers;
}

// The README's plan: llama2-13b on 8 A100s as one 8-stage pipeline, 64 micro-batches of 8,192
// tokens, --recompute auto; on the dgx-a100 cluster, or on a100-80gb GPUs alone.
std::optional<PlanInputs> readme_plan_inputs(bool on_dgx_a100) {
  auto model = models::load_model("llama2-13b");
  auto cluster = on_dgx_a100 ? load_cluster("dgx-a100") : make_gpu_cluster("a100-80gb");
  EXPECT_TRUE(model.ok() && cluster.ok());
  if (!model.ok() || !cluster.ok()) return std::nullopt;
  auto profile = profile_for_gpu(cluster->gpu);
  EXPECT_TRUE(profile.ok()) << profile.error().message;
  if (!profile.ok()) return std::nullopt;
  ParallelConfig c;
  c.gpus = 8;
  c.pp = 8;
  c.global_batch = 64;
  c.seq_length = 8192;
  c.recompute = RecomputeChoice::kAuto;
  auto resolved = resolve_config(*model, c);
  EXPECT_TRUE(resolved.ok()) << resolved.error().message;
  if (!resolved.ok()) return std::nullopt;
  return PlanInputs{*model, *cluster, *profile, *resolved};
}

TEST(Megatron, LayoutOfARealPlanExpandsToThePlannedSplit) {
  const auto inputs = readme_plan_inputs(false);
  ASSERT_TRUE(inputs.has_value());
  const models::ModelDesc* model = &inputs->model;
  auto plan = make_plan(*inputs);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto s = emit_megatron(*model, *plan);
  std::vector<int> planned;
  for (const auto& st : plan->suggested.stages) planned.push_back(st.layers);
  std::smatch m;
  if (std::regex_search(s.text, m, std::regex("--pipeline-model-parallel-layout \"([^\"]+)\""))) {
    EXPECT_EQ(decoder_layers_of(m[1]), planned);
  } else {
    // Expressible with first/last counts: check them against the planned ends.
    std::smatch first;
    if (std::regex_search(s.text, first, std::regex("--decoder-first-pipeline-num-layers (\\d+)"))) {
      EXPECT_EQ(std::stoi(first[1]), planned.front());
    }
  }
}

// The README's plan recomputes 2, 2, 1 and 0 of each stage's first layers, which no framework's
// one setting for every stage expresses. With a pricer the settings are the fastest each framework
// takes that fits on the suggested split, and say what that costs; without one, the closest.
TEST(FrameworkSettings, SettingsThatCannotBeExactArePlannedOnTheSuggestedSplit) {
  const auto maybe_inputs = readme_plan_inputs(true);
  ASSERT_TRUE(maybe_inputs.has_value());
  const PlanInputs& inputs = *maybe_inputs;
  const models::ModelDesc* model = &inputs.model;
  auto plan = make_plan(inputs);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::set<int> counts;
  for (const auto& st : plan->suggested.stages) counts.insert(st.full_recompute_layers);
  ASSERT_GT(counts.size(), 1u) << "the plan no longer recomputes per stage";

  const auto made = uniform_recompute_pricer(inputs, plan->suggested);
  ASSERT_TRUE(made.ok()) << made.error().message;
  const RecomputePricer& pricer = *made;
  // Megatron-LM: none, selective, or full recomputation of every stage's first k layers.
  std::vector<UniformRecompute> megatron = {{RecomputeChoice::kNone, 0}, {RecomputeChoice::kSelective, 0}};
  for (int k = 1; k < 6; ++k) megatron.push_back({RecomputeChoice::kFull, k});
  megatron.push_back({RecomputeChoice::kFull, 0});
  std::optional<PlanReport> fastest;
  UniformRecompute fastest_setting;
  for (const UniformRecompute& setting : megatron) {
    auto report = pricer(setting);
    ASSERT_TRUE(report.ok()) << report.error().message;
    if (report->fits && (!fastest || report->iteration_s < fastest->iteration_s)) {
      fastest = *report;
      fastest_setting = setting;
    }
  }
  ASSERT_TRUE(fastest.has_value());
  ASSERT_EQ(fastest_setting.mode, RecomputeChoice::kFull);
  const auto s = emit_megatron(*model, *plan, &pricer);
  EXPECT_THAT(s.text, HasSubstr("--recompute-method block\n  --recompute-num-layers " +
                                std::to_string(fastest_setting.block_layers) + "\n"));
  char step[32];
  std::snprintf(step, sizeof(step), "a %.3f s step", fastest->iteration_s);
  ASSERT_EQ(s.not_expressible.size(), 1u);
  EXPECT_THAT(s.not_expressible[0], HasSubstr(step));
  EXPECT_THAT(s.not_expressible[0], HasSubstr("the fastest setting Megatron-LM takes that fits"));
  EXPECT_THAT(s.not_expressible[0], Not(HasSubstr("not planned")));
  // The pricer on the plan's own split prices the plan's own choices as the plan does: block
  // recomputation of the largest count everywhere is never faster than the plan.
  EXPECT_GE(fastest->iteration_s, plan->suggested.iteration_s);
  // Without a pricer: the closest setting, said to be unplanned.
  EXPECT_THAT(emit_megatron(*model, *plan).not_expressible[0], HasSubstr("has not planned"));

  // DeepSpeed and InternEvo recompute all layers of every stage or none.
  auto none = pricer({RecomputeChoice::kNone, 0});
  auto all = pricer({RecomputeChoice::kFull, 0});
  ASSERT_TRUE(none.ok() && all.ok());
  const bool run_none = none->fits && (!all->fits || none->iteration_s < all->iteration_s);
  const auto ds = emit_deepspeed(*model, *plan, &pricer);
  EXPECT_THAT(ds.text,
              HasSubstr(run_none ? "activation_checkpoint_interval=0" : "activation_checkpoint_interval=1"));
  EXPECT_THAT(ds.not_expressible[0], HasSubstr("DeepSpeed takes"));
  const auto ie = emit_internevo(*model, *plan, &pricer);
  EXPECT_THAT(ie.text, HasSubstr(run_none ? "checkpoint=False" : "checkpoint=True"));
}

}  // namespace
}  // namespace pipescope::planner
