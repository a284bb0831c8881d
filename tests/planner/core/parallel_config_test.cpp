// resolve_config refuses what Megatron-LM would refuse, naming the numbers, and fills defaults.
#include <gtest/gtest.h>

#include <tuple>

#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/parallel_config.h"

namespace pipescope::planner {
namespace {

models::ModelDesc llama2_7b() { return *models::load_model("llama2-7b"); }  // 32 layers, 32 heads

ParallelConfig config(int64_t gpus, int64_t tp, int64_t pp) {
  ParallelConfig c;
  c.gpus = gpus;
  c.tp = tp;
  c.pp = pp;
  return c;
}

void expect_refused(const ParallelConfig& c, const std::string& mentions) {
  auto resolved = resolve_config(llama2_7b(), c);
  ASSERT_FALSE(resolved.ok()) << "expected a refusal mentioning " << mentions;
  EXPECT_NE(resolved.error().message.find(mentions), std::string::npos) << resolved.error().message;
}

TEST(ResolveConfig, DerivesDataParallelAndDefaultBatch) {
  auto c = resolve_config(llama2_7b(), config(64, 2, 4));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->dp(), 8);
  EXPECT_EQ(c->global_batch, 1 * 8 * 4);  // one micro-batch per stage and DP rank
  EXPECT_EQ(c->micro_batches(), 4);
  EXPECT_EQ(c->seq_length, 4096);  // llama2's context
}

TEST(ResolveConfig, TensorParallelMustDivideHeads) { expect_refused(config(24, 3, 1), "heads"); }

TEST(ResolveConfig, PipelineCannotExceedLayers) { expect_refused(config(64, 1, 64), "32 layers"); }

TEST(ResolveConfig, GpusMustBeAMultipleOfModelParallelism) {
  expect_refused(config(12, 8, 1), "tp x pp x cp = 8");
}

TEST(ResolveConfig, AbsurdSizesAreRefusedAsTypos) {
  ParallelConfig c = config(8, 8, 1);
  c.seq_length = 2'000'000'000;
  expect_refused(c, "--seq 2000000000 is above");
  c = config(int64_t{1} << 40, 8, 1);
  expect_refused(c, "--gpus");
  c = config(64, 8, 8);  // dp 1: 2^20 micro-batches of 8 stages, 16M simulated operations
  c.global_batch = int64_t{1} << 20;
  expect_refused(c, "raise --mbs or lower --gbs");
  c = config(8, 1 << 20, 1 << 20);  // tp x pp would overflow if multiplied by cp unchecked
  expect_refused(c, "--tp");
}

TEST(ResolveConfig, DeepSpeedBf16OptimizerRunsAtZeroStageZeroOrOne) {
  ParallelConfig c = config(16, 2, 1);  // dp 8
  c.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  c.zero_stage = 1;
  EXPECT_TRUE(resolve_config(llama2_7b(), c).ok());
  c.zero_stage = 2;
  expect_refused(c, "ZeRO stage 0 or 1");
  c.zero_stage = 1;
  c.zero_shard = 4;
  expect_refused(c, "--zero-shard");
}

TEST(ResolveConfig, InternEvoShardsTheOptimizerStateOrWithFsdpEverythingButHasNoStageTwo) {
  ParallelConfig c = config(16, 2, 1);  // dp 8
  c.optimizer = OptimizerRecipe::kInternEvo;
  for (int zero : {0, 1}) {
    c.zero_stage = zero;
    EXPECT_TRUE(resolve_config(llama2_7b(), c).ok()) << zero;
  }
  c.zero_shard = 4;
  EXPECT_TRUE(resolve_config(llama2_7b(), c).ok());
  c.zero_stage = 2;
  expect_refused(c, "--optimizer internevo shards the optimizer state (zero1, --zero 1) or, with zero1.fsdp");
  // zero1.fsdp: torch FSDP, which InternEvo refuses with pipeline parallelism and with experts.
  c.zero_stage = 3;
  EXPECT_TRUE(resolve_config(llama2_7b(), c).ok());  // tp 2, no pipeline
  ParallelConfig piped = config(16, 1, 2);
  piped.optimizer = OptimizerRecipe::kInternEvo;
  piped.zero_stage = 3;
  expect_refused(piped,
                 "zero1.fsdp, which refuses pipeline parallelism: use --pp 1, or --zero 1 with --pp 2");
  ParallelConfig fsdp = config(16, 1, 1);  // dp 16
  fsdp.optimizer = OptimizerRecipe::kInternEvo;
  fsdp.zero_stage = 3;
  fsdp.zero_shard = 8;
  EXPECT_TRUE(resolve_config(llama2_7b(), fsdp).ok());
  fsdp.gpus = 32;  // mixtral-8x7b needs ep to divide dp
  auto moe = resolve_config(*models::load_model("mixtral-8x7b"), fsdp);
  ASSERT_FALSE(moe.ok());
  EXPECT_NE(moe.error().message.find("refuses mixture-of-experts models such as mixtral-8x7b"),
            std::string::npos)
      << moe.error().message;
}

TEST(OptimizerRecipe, EverySpellingReadsBack) {
  for (OptimizerRecipe recipe :
       {OptimizerRecipe::kMegatron, OptimizerRecipe::kDeepSpeedBf16, OptimizerRecipe::kInternEvo}) {
    EXPECT_EQ(parse_optimizer_recipe(to_string(recipe)), recipe);
  }
  EXPECT_FALSE(parse_optimizer_recipe("adam").has_value());
  EXPECT_FALSE(parse_optimizer_recipe("").has_value());
}

TEST(ResolveConfig, ContextParallelNeedsFusedAttention) {
  ParallelConfig c = config(2, 1, 1);
  c.cp = 2;
  c.flash_attention = false;
  expect_refused(c, "--cp needs fused (flash) attention");
}

TEST(ResolveConfig, GlobalBatchMustDivideByMicroBatchTimesDp) {
  ParallelConfig c = config(16, 1, 2);  // dp 8
  c.global_batch = 100;
  expect_refused(c, "--gbs 100");
}

TEST(ResolveConfig, InterleavedNeedsVirtualStagesThatDivideLayers) {
  ParallelConfig c = config(16, 1, 4);
  c.schedule = ScheduleKind::kInterleaved;
  expect_refused(c, "--vpp");
  c.vpp = 3;  // 4 x 3 does not divide 32
  expect_refused(c, "does not divide");
  c.vpp = 2;
  c.global_batch = int64_t{4} * 6;  // dp 4: 6 micro-batches, not a multiple of pp 4
  expect_refused(c, "multiple of --pp 4");
}

TEST(ResolveConfig, ShardGroupMustDivideDataParallel) {
  ParallelConfig c = config(48, 1, 1);  // dp 48
  c.zero_stage = 3;
  c.zero_shard = 32;
  expect_refused(c, "--zero-shard 32");
  c.zero_stage = 0;
  c.zero_shard = 16;
  expect_refused(c, "--zero 1, 2 or 3");
}

TEST(ResolveConfig, ExpertParallelIsForMixtureOfExperts) {
  ParallelConfig c = config(16, 1, 1);
  c.ep = 2;
  expect_refused(c, "no experts");
}

TEST(ResolveConfig, SequenceParallelNeedsTensorParallel) {
  ParallelConfig c = config(8, 1, 1);
  c.sequence_parallel = true;
  expect_refused(c, "--tp");
}

TEST(TrainingFrameworks, EachSetsItsRecipeAndWhenItsGradientSyncRuns) {
  struct Expected {
    TrainingFramework framework;
    const char* name;
    OptimizerRecipe recipe;
    bool overlaps;
    bool tensor_parallel_overlaps;  // the column-parallel linears' backward collectives beside GEMMs
  };
  for (const Expected& e :
       {Expected{TrainingFramework::kMegatronCore, "megatron-core", OptimizerRecipe::kMegatron, true, true},
        {TrainingFramework::kPyTorchEager, "pytorch-eager", OptimizerRecipe::kMegatron, false, false},
        {TrainingFramework::kMegatron2021, "megatron-2021", OptimizerRecipe::kMegatron, false, false},
        {TrainingFramework::kMegatron2022, "megatron-2022", OptimizerRecipe::kMegatron, false, true},
        {TrainingFramework::kDeepSpeed, "deepspeed", OptimizerRecipe::kDeepSpeedBf16, false, false},
        {TrainingFramework::kInternEvo, "internevo", OptimizerRecipe::kInternEvo, true, false},
        {TrainingFramework::kInternLM2023, "internlm-2023", OptimizerRecipe::kInternEvo, false, false}}) {
    EXPECT_EQ(to_string(e.framework), e.name);
    EXPECT_EQ(parse_training_framework(e.name), e.framework);
    EXPECT_EQ(framework_optimizer(e.framework), e.recipe) << e.name;
    ParallelConfig c;
    c.framework = e.framework;
    c.optimizer = e.recipe;
    EXPECT_EQ(sync_overlaps_backward(c), e.overlaps) << e.name;
    EXPECT_EQ(tensor_parallel_overlaps_backward_gemms(c), e.tensor_parallel_overlaps) << e.name;
    c.grad_sync = GradSync::kDuringBackward;
    EXPECT_TRUE(sync_overlaps_backward(c)) << e.name;
    c.grad_sync = GradSync::kAfterBackward;
    EXPECT_FALSE(sync_overlaps_backward(c)) << e.name;
  }
  EXPECT_FALSE(parse_training_framework("generic").has_value());  // not a --framework choice
  // Pipeline transfers: Megatron-LM of 2021-2022 and DeepSpeed wait for theirs, megatron-core
  // except in the interleaved schedule; Megatron-LM of 2021-2022 scatters them over TP.
  for (const auto& [framework, blocks_1f1b, blocks_interleaved, scatters] :
       {std::tuple{TrainingFramework::kGeneric, false, false, false},
        std::tuple{TrainingFramework::kMegatronCore, true, false, false},
        std::tuple{TrainingFramework::kMegatron2021, true, true, true},
        std::tuple{TrainingFramework::kMegatron2022, true, true, true},
        std::tuple{TrainingFramework::kDeepSpeed, true, true, false},
        std::tuple{TrainingFramework::kInternEvo, false, false, false},
        std::tuple{TrainingFramework::kInternLM2023, false, false, false},
        std::tuple{TrainingFramework::kPyTorchEager, false, false, false}}) {
    ParallelConfig c;
    c.framework = framework;
    EXPECT_EQ(pipeline_p2p_blocks(c), blocks_1f1b) << to_string(framework);
    EXPECT_EQ(pipeline_p2p_scatters(c), scatters) << to_string(framework);
    c.schedule = ScheduleKind::kInterleaved;
    EXPECT_EQ(pipeline_p2p_blocks(c), blocks_interleaved) << to_string(framework);
  }
  EXPECT_FALSE(parse_training_framework("megatron").has_value());
  EXPECT_EQ(parse_grad_sync("after-backward"), GradSync::kAfterBackward);
  EXPECT_FALSE(parse_grad_sync("default").has_value());
  // None named: the recipe's own habit, as before frameworks were named.
  ParallelConfig generic;
  EXPECT_TRUE(sync_overlaps_backward(generic));
  EXPECT_FALSE(tensor_parallel_overlaps_backward_gemms(generic));
  generic.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  EXPECT_FALSE(sync_overlaps_backward(generic));
  generic.framework = TrainingFramework::kMegatron2022;
  EXPECT_EQ(describe(generic).find("framework megatron-2022") != std::string::npos, true);
}

}  // namespace
}  // namespace pipescope::planner
