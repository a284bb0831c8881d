// What one unit costs on one rank: static memory under each ZeRO stage (known answers from the
// 18-bytes-per-parameter recipe and the DeepSpeed and InternEvo recipes), what recomputation adds,
// the data-parallel sync and optimizer step, and the tied-embedding copy.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "pipescope/planner/cost_model.h"
#include "planner_fixture.h"

namespace pipescope::planner {
namespace {

using test::data_parallel_8;

// llama2-7b's word embedding: 32000 x 4096 (32000 is already a multiple of 128).
constexpr double kEmbeddingParams = 32000.0 * 4096;
// One llama2-7b layer: attention 4h^2, SwiGLU MLP 3hf, two RMSNorm weights.
constexpr double kLayerParams = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096;

// Whether the A100 profile's training losses are priced (kNone: a test of something they would blur).
enum class Losses { kPriced, kNone };

CostModel costs_for(ParallelConfig c, const std::string& model = "llama2-7b",
                    Losses losses = Losses::kPriced) {
  PlanInputs in = test::inputs(model, "dgx-a100", std::move(c));
  if (losses == Losses::kNone) in.profile.losses = {};
  auto costs = build_cost_model(in);
  EXPECT_TRUE(costs.ok()) << costs.error().message;
  return costs.ok() ? *costs : CostModel{};
}

TEST(StaticMemory, MixedPrecisionAdamIsEighteenBytesPerParameter) {
  const CostModel costs = costs_for(data_parallel_8(0));
  ASSERT_EQ(costs.units.size(), 34u);  // embedding, 32 layers, head
  EXPECT_EQ(costs.units[0].parameters, static_cast<int64_t>(kEmbeddingParams));
  EXPECT_EQ(costs.units[1].parameters, static_cast<int64_t>(kLayerParams));
  EXPECT_EQ(costs.units[0].static_bytes, static_cast<int64_t>(18 * kEmbeddingParams));
  EXPECT_EQ(costs.units[1].static_bytes, static_cast<int64_t>(18 * kLayerParams));
}

TEST(StaticMemory, EachZeroStageShardsOneMoreStateOverDataParallel) {
  // dp 8: ZeRO-1 2 + 4 + 12/8, ZeRO-2 2 + 4/8 + 12/8, ZeRO-3 (2 + 4 + 12)/8 bytes per parameter.
  EXPECT_EQ(costs_for(data_parallel_8(1)).units[1].static_bytes, static_cast<int64_t>(7.5 * kLayerParams));
  EXPECT_EQ(costs_for(data_parallel_8(2)).units[1].static_bytes, static_cast<int64_t>(4.0 * kLayerParams));
  EXPECT_EQ(costs_for(data_parallel_8(3)).units[1].static_bytes, static_cast<int64_t>(2.25 * kLayerParams));
}

TEST(StaticMemory, HierarchicalZeroShardsWithinItsGroupOnly) {
  // Shard groups of 4 out of dp 8: ZeRO-3 keeps 18/4 bytes per parameter, not 18/8.
  EXPECT_EQ(costs_for(data_parallel_8(3, 4)).units[1].static_bytes, static_cast<int64_t>(4.5 * kLayerParams));
}

TEST(StaticMemory, DeepSpeedBf16OptimizerKeepsUnshardedGradients) {
  // BF16_Optimizer at dp 8: bf16 weights 2 + bf16 gradients 2 + unsharded fp32 gradients 4 +
  // fp32 master weights and Adam moments 12 / 8 = 9.5 bytes per parameter, at ZeRO 0 or 1 alike.
  for (int zero : {0, 1}) {
    ParallelConfig c = data_parallel_8(zero);
    c.optimizer = OptimizerRecipe::kDeepSpeedBf16;
    const CostModel costs = costs_for(c);
    EXPECT_EQ(costs.units[1].static_bytes, static_cast<int64_t>(9.5 * kLayerParams));
    EXPECT_EQ(costs.units[0].static_bytes, static_cast<int64_t>(9.5 * kEmbeddingParams));
  }
  // Its fp32 accumulation of every micro-batch's gradients costs backward time Megatron's does not.
  ParallelConfig megatron = data_parallel_8(1);
  ParallelConfig deepspeed = megatron;
  deepspeed.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  EXPECT_GT(costs_for(deepspeed).units[1].by_mode[0].backward_s,
            costs_for(megatron).units[1].by_mode[0].backward_s);
  EXPECT_EQ(costs_for(deepspeed).units[1].by_mode[0].forward_s,
            costs_for(megatron).units[1].by_mode[0].forward_s);
}

TEST(StaticMemory, InternEvoKeepsBf16GradientsAndShardsWithinItsZeroOneGroup) {
  // HybridZeroOptimizer: bf16 weights 2 + bf16 gradients 2 + fp32 master and moments 12 / g.
  ParallelConfig c = data_parallel_8(1, 4);
  c.optimizer = OptimizerRecipe::kInternEvo;
  EXPECT_EQ(costs_for(c).units[1].static_bytes, static_cast<int64_t>(7.0 * kLayerParams));  // g 4
  c.zero_shard = 0;
  EXPECT_EQ(costs_for(c).units[1].static_bytes, static_cast<int64_t>(5.5 * kLayerParams));  // g = dp 8
  c.zero_stage = 0;  // zero1 size 1: nothing sharded
  EXPECT_EQ(costs_for(c).units[1].static_bytes, static_cast<int64_t>(16.0 * kLayerParams));
}

TEST(StaticMemory, InternEvosFsdpShardsEverythingWithinItsZeroOneGroup) {
  // zero1.fsdp (--zero 3): FSDP's bf16 weights 2 and gradients 2, FSDPadaptOptimizer's fp32
  // weights and moments 12, all over the zero1 group: 16/4 bytes per parameter in groups of 4, 16/8
  // over all of dp 8. Megatron's recipe at ZeRO 3 keeps fp32 gradients: 18/8.
  ParallelConfig c = data_parallel_8(3, 4);
  c.optimizer = OptimizerRecipe::kInternEvo;
  EXPECT_EQ(costs_for(c).units[1].static_bytes, static_cast<int64_t>(4.0 * kLayerParams));
  EXPECT_EQ(costs_for(c).units[0].static_bytes, static_cast<int64_t>(4.0 * kEmbeddingParams));
  c.zero_shard = 0;
  EXPECT_EQ(costs_for(c).units[1].static_bytes, static_cast<int64_t>(2.0 * kLayerParams));
  // Its step casts the shard's bf16 gradients to fp32: 4 bytes per shard parameter.
  EXPECT_EQ(costs_for(c).units[1].step_bytes, static_cast<int64_t>(4 * kLayerParams / 8));
}

TEST(StepMemory, ZeroThreeHoldsALayersGatheredWeightsAndGradientAtTheBackwardsPeak) {
  // A layer's bf16 weights gathered, the next layer's prefetched, and its whole bf16 gradient before
  // the reduce-scatter: 3 x 2 bytes per layer parameter on top of what ZeRO 1 holds in the backward.
  ParallelConfig zero1 = data_parallel_8(1);
  ParallelConfig zero3 = data_parallel_8(3);
  for (size_t mode = 0; mode < 3; ++mode) {
    SCOPED_TRACE(mode);
    EXPECT_EQ(costs_for(zero3).units[1].by_mode[mode].transient_bytes -
                  costs_for(zero1).units[1].by_mode[mode].transient_bytes,
              std::llround(6 * kLayerParams));
    EXPECT_EQ(costs_for(zero3).units[0].by_mode[mode].transient_bytes -
                  costs_for(zero1).units[0].by_mode[mode].transient_bytes,
              std::llround(6 * kEmbeddingParams));
  }
}

TEST(StepMemory, EachRecipeSizesItsOptimizerStepsWorkingMemory) {
  // DeepSpeed's all-reduce runs on a bf16 copy of the stage's fp32 gradients: 2 bytes per
  // parameter, sharded or not. InternEvo flattens the shard's bf16 gradients (2) and casts them to
  // fp32 (4): 6 bytes per shard parameter. Megatron-LM steps in place.
  ParallelConfig c = data_parallel_8(1);
  c.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  EXPECT_EQ(costs_for(c).units[1].step_bytes, static_cast<int64_t>(2 * kLayerParams));
  EXPECT_EQ(costs_for(c).units[0].step_bytes, static_cast<int64_t>(2 * kEmbeddingParams));
  c = data_parallel_8(1, 4);
  c.optimizer = OptimizerRecipe::kInternEvo;
  EXPECT_EQ(costs_for(c).units[1].step_bytes, static_cast<int64_t>(6 * kLayerParams / 4));
  c = data_parallel_8(0);
  c.optimizer = OptimizerRecipe::kInternEvo;
  EXPECT_EQ(costs_for(c).units[1].step_bytes, static_cast<int64_t>(6 * kLayerParams));
  for (int zero : {0, 1, 2, 3}) {
    for (const UnitCost& unit : costs_for(data_parallel_8(zero)).units) EXPECT_EQ(unit.step_bytes, 0) << zero;
  }
}

TEST(StepMemory, DeepSpeedCastsEachGradientToFp32BeforeAccumulatingIt) {
  // update_hp_grads adds lp.grad.to(float32) into the fp32 buffer, one parameter at a time: the
  // largest tensor's fp32 copy is working memory of the pipeline phase. llama2-7b: the word
  // embedding (32000 x 4096), and in a layer the fused SwiGLU gate and up projection (2 x 11008 x
  // 4096, larger than the fused QKV's 3 x 4096 x 4096). Full recomputation's transient is larger.
  ParallelConfig c = data_parallel_8(1);
  c.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  const CostModel deepspeed = costs_for(c);
  EXPECT_EQ(deepspeed.units[0].by_mode[0].transient_bytes, static_cast<int64_t>(4 * kEmbeddingParams));
  EXPECT_EQ(deepspeed.units[1].by_mode[0].transient_bytes, int64_t{4} * 2 * 11008 * 4096);
  EXPECT_EQ(deepspeed.units[34 - 1].by_mode[0].transient_bytes, static_cast<int64_t>(4 * kEmbeddingParams));
  const CostModel megatron = costs_for(data_parallel_8(1));
  EXPECT_EQ(megatron.units[0].by_mode[0].transient_bytes, 0);
  // Megatron-LM accumulates into the main gradients in its GEMM: a layer's transient is its
  // backward's working memory, the MLP's here (6 bytes a token per FFN unit, 4,096 tokens).
  EXPECT_EQ(megatron.units[1].by_mode[0].transient_bytes, int64_t{6} * 4096 * 11008);
  EXPECT_EQ(deepspeed.units[1].by_mode[2].transient_bytes, megatron.units[1].by_mode[2].transient_bytes);
  EXPECT_GT(megatron.units[1].by_mode[2].transient_bytes, int64_t{4} * 2 * 11008 * 4096);
}

TEST(StepMemory, HeldAfterTheStepAddsTheStepsSegmentsToThePipelinePhase) {
  CostModel costs;
  costs.reserve_fraction = 0.25;
  costs.fixed_bytes = 1000;
  costs.device_bytes = 100'000;
  // No step memory: held is the peak, (static + pipeline) x 1.25 + fixed.
  StageMemory m = stage_memory(costs, 8000, 4000, 0);
  EXPECT_EQ(m.allocated_bytes, 12'000);
  EXPECT_EQ(m.peak_memory_bytes, 16'000);
  EXPECT_EQ(m.reserved_bytes, 16'000);
  // A step smaller than the pipeline phase leaves the peak alone; its segments come on top.
  m = stage_memory(costs, 8000, 4000, 2000);
  EXPECT_EQ(m.allocated_bytes, 12'000);
  EXPECT_EQ(m.peak_memory_bytes, 16'000);
  EXPECT_EQ(m.reserved_bytes, 18'000);
  // A step larger than the pipeline phase sets the peak too.
  m = stage_memory(costs, 8000, 4000, 6000);
  EXPECT_EQ(m.allocated_bytes, 14'000);
  EXPECT_EQ(m.peak_memory_bytes, 18'500);
  EXPECT_EQ(m.reserved_bytes, 22'000);
  // The allocator holds no more than the GPU has: short of it, it gives its cache back.
  costs.device_bytes = 20'000;
  EXPECT_EQ(stage_memory(costs, 8000, 4000, 6000).reserved_bytes, 20'000);
  costs.device_bytes = 17'000;
  EXPECT_EQ(stage_memory(costs, 8000, 4000, 6000).reserved_bytes, 18'500);
}

TEST(DataParallel, DeepSpeedAllReducesABf16CopyOfItsFp32Gradients) {
  // dp 8 on one node: cast to bf16 (read 4, write 2) and back (read 2, write 4), a bf16
  // all-reduce, and the all-gather of the updated bf16 weights.
  ParallelConfig c = data_parallel_8(1);
  c.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  const double link = in.cluster.intra_node_bytes_per_s;
  const double hbm = in.profile.memory_bound_bytes_per_s(in.cluster.gpu);
  const double expected = 12 * kLayerParams / hbm +
                          in.profile.collective_time_s(CollectiveKind::kAllReduce, 2 * kLayerParams, 8,
                                                       LinkTier::kIntraNode, link) +
                          in.profile.collective_time_s(CollectiveKind::kAllGather, 2 * kLayerParams, 8,
                                                       LinkTier::kIntraNode, link);
  EXPECT_NEAR(costs_for(c).units[1].dp_sync_s, expected, 1e-12);
}

// dp 16 on two dgx-a100 nodes under InternEvo's recipe, sharded in zero1 groups of `shard`.
ParallelConfig internevo_on_two_nodes(int zero_stage, int64_t shard) {
  ParallelConfig c;
  c.gpus = 16;
  c.zero_stage = zero_stage;
  c.zero_shard = shard;
  c.optimizer = OptimizerRecipe::kInternEvo;
  return c;
}

TEST(DataParallel, InternEvoAllReducesBf16GradientsOverAllOfDataParallelism) {
  // dp 16 on two dgx-a100 nodes in zero1 groups of 8: the gradients go over all 16 ranks in bf16
  // (half the bytes of Megatron's fp32 sync), whatever the shard group.
  const ParallelConfig c = internevo_on_two_nodes(1, 8);
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  const double node_nics = 8 * 200e9 / 8;  // bytes/s
  EXPECT_DOUBLE_EQ(costs_for(c).units[1].dp_sync_s,
                   in.profile
                       .collective_cost(CollectiveKind::kAllReduce, 2 * kLayerParams, 16, 2,
                                        LinkTier::kInterNode, node_nics)
                       .total_s());
}

TEST(OptimizerStep, MegatronsStepTakesTheNormStepsAdamCopiesTheMasterAndZeroesTheGradients) {
  // Per parameter: the norm (4), FusedAdam (28) and the copy into bf16 (6) on the rank's shard,
  // the zeroing of the fp32 gradient buffer (4) wherever that buffer is not sharded.
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", data_parallel_8(0));
  const double hbm = in.profile.memory_bound_bytes_per_s(in.cluster.gpu);
  EXPECT_NEAR(costs_for(data_parallel_8(0)).units[1].optimizer_s, kLayerParams * 42 / hbm, 1e-12);
  EXPECT_NEAR(costs_for(data_parallel_8(1)).units[1].optimizer_s,
              (kLayerParams / 8 * 38 + kLayerParams * 4) / hbm, 1e-12);
  EXPECT_NEAR(costs_for(data_parallel_8(2)).units[1].optimizer_s, kLayerParams / 8 * 42 / hbm, 1e-12);
  // BF16_Optimizer: Adam and the copy on the shard (34), the norm and the zeroing over its
  // unsharded fp32 gradients (8).
  ParallelConfig deepspeed = data_parallel_8(0);
  deepspeed.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  EXPECT_NEAR(costs_for(deepspeed).units[1].optimizer_s, (kLayerParams / 8 * 34 + kLayerParams * 8) / hbm,
              1e-12);
}

TEST(OptimizerStep, InternEvoBroadcastsEachShardOneAfterAnother) {
  // dp 8 on one node, zero1 over all 8: the step adds 8 broadcasts of a layer's bf16 weights / 8,
  // each priced as the all-gather with the same link traffic; their 8 latencies are paid once per
  // stage (step_fixed_s), not once per layer.
  ParallelConfig c = data_parallel_8(1);
  c.optimizer = OptimizerRecipe::kInternEvo;
  const CostModel internevo = costs_for(c);
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  const double link = in.cluster.intra_node_bytes_per_s;
  const double as_all_gather = 2 * kLayerParams / 7;
  const double latency =
      in.profile.collective_cost(CollectiveKind::kAllGather, as_all_gather, 8, 1, LinkTier::kIntraNode, link)
          .latency_s;
  const double broadcasts_s = 8 * (in.profile.collective_time_s(CollectiveKind::kAllGather, as_all_gather, 8,
                                                                LinkTier::kIntraNode, link) -
                                   latency);
  const double hbm = in.profile.memory_bound_bytes_per_s(in.cluster.gpu);
  // The Adam step (30 bytes per shard parameter) and the flatten and cast of its gradients (10).
  EXPECT_NEAR(internevo.units[1].optimizer_s, kLayerParams / 8 * 40 / hbm + broadcasts_s, 1e-12);
  EXPECT_GT(broadcasts_s, 0);
  EXPECT_NEAR(internevo.step_fixed_s, 8 * latency, 1e-12);
  EXPECT_GT(internevo.step_fixed_s, 0);
  // Megatron's recipe has no broadcast and no per-stage fixed part.
  EXPECT_EQ(costs_for(data_parallel_8(1)).step_fixed_s, 0);
  // Without sharding there is nothing to broadcast.
  c.zero_stage = 0;
  EXPECT_EQ(costs_for(c).step_fixed_s, 0);
  EXPECT_NEAR(costs_for(c).units[1].optimizer_s, kLayerParams * 40 / hbm, 1e-12);
}

TEST(DataParallel, InternEvosFsdpAllReducesEachGradientShardAcrossTheGroupsAfterTheBackward) {
  // dp 16 on two dgx-a100 nodes, zero1.fsdp in groups of 8: every micro-batch reduce-scatters the
  // bf16 gradients within the group (in the backward's communication); the step all-reduces each
  // tensor's shard (2 bytes x params / 8) across the 2 groups, one collective per tensor, after
  // the backward. llama2-7b's layer has 6 tensors (4 linears, 2 norms). No shard is broadcast.
  ParallelConfig c = internevo_on_two_nodes(3, 8);
  c.framework = TrainingFramework::kInternEvo;
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  // The 8 groups' all-reduces run at once, one member per node each: an eighth of the node's NICs.
  const double nic_share = 8 * 200e9 / 8 / 8;  // bytes/s
  const CostModel costs = costs_for(c);
  EXPECT_NEAR(costs.units[1].dp_sync_s,
              6 * in.profile
                      .collective_cost(CollectiveKind::kAllReduce, 2 * kLayerParams / 8 / 6, 2, 2,
                                       LinkTier::kInterNode, nic_share)
                      .total_s(),
              1e-12);
  EXPECT_FALSE(costs.sync_overlaps_backward);
  EXPECT_EQ(costs.step_fixed_s, 0);
  // The step: Adam (30 bytes per shard parameter) and the cast and copy back (10); no broadcast.
  const double hbm = in.profile.memory_bound_bytes_per_s(in.cluster.gpu);
  EXPECT_NEAR(costs.units[1].optimizer_s, kLayerParams / 8 * 40 / hbm, 1e-12);
  // Without a second group there is nothing to all-reduce.
  c.zero_shard = 0;
  EXPECT_EQ(costs_for(c).units[1].dp_sync_s, 0);
  // On seren, one NIC per node, the gathers over both nodes outlast the compute: the backward's
  // exposed reduce-scatter is of bf16 gradients, less than Megatron's recipe's fp32 ones.
  ParallelConfig megatron = c;
  megatron.optimizer = OptimizerRecipe::kMegatron;
  megatron.framework = TrainingFramework::kGeneric;
  const auto backward_on_seren = [](const ParallelConfig& config) {
    auto seren = build_cost_model(test::inputs("llama2-7b", "seren", config));
    EXPECT_TRUE(seren.ok());
    return seren.ok() ? seren->units[1].work_by_mode[0].backward : WorkTimes{};
  };
  const WorkTimes fsdp = backward_on_seren(c);
  const WorkTimes fp32 = backward_on_seren(megatron);
  EXPECT_GT(fsdp[WorkKind::kCommunication], 0);
  EXPECT_LT(fsdp[WorkKind::kCommunication], fp32[WorkKind::kCommunication]);
}

TEST(GradientAccumulation, InternEvosFsdpAddsEachLaterMicroBatchsReducedShard) {
  // zero1.fsdp accumulates the reduced gradient shard: 6 bytes per shard parameter, (m - 1) / m of
  // it per micro-batch, in zero1 groups of 4 out of dp 8. Without the profile's losses: their
  // slowdown beside the prefetched gathers weighs the added memory-bound work too.
  ParallelConfig c = data_parallel_8(3, 4);
  c.optimizer = OptimizerRecipe::kInternEvo;
  c.global_batch = 8;  // m 1
  const double one = costs_for(c, "llama2-7b", Losses::kNone).units[1].by_mode[0].backward_s;
  c.global_batch = 32;  // m 4
  const double four = costs_for(c, "llama2-7b", Losses::kNone).units[1].by_mode[0].backward_s;
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  const double hbm = in.profile.memory_bound_bytes_per_s(in.cluster.gpu);
  EXPECT_NEAR(four - one, kLayerParams / 4 * 6 / hbm * 3 / 4, 1e-12);
}

TEST(GradientAccumulation, InternEvoAddsEachLaterMicroBatchsBf16GradientsInMemory) {
  // Autograd adds every micro-batch's weight gradient into .grad after the first: 6 bytes per
  // parameter, (m - 1) / m of it per micro-batch. One micro-batch accumulates nothing.
  ParallelConfig c = data_parallel_8(1);
  c.optimizer = OptimizerRecipe::kInternEvo;
  c.global_batch = 8;  // m 1
  const double one = costs_for(c).units[1].by_mode[0].backward_s;
  c.global_batch = 32;  // m 4
  const double four = costs_for(c).units[1].by_mode[0].backward_s;
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  const double hbm = in.profile.memory_bound_bytes_per_s(in.cluster.gpu);
  EXPECT_NEAR(four - one, kLayerParams * 6 / hbm * 3 / 4, 1e-12);
  ParallelConfig megatron = data_parallel_8(1);
  megatron.global_batch = 8;
  EXPECT_DOUBLE_EQ(costs_for(megatron).units[1].by_mode[0].backward_s, one);
}

TEST(Recompute, FullRedoesTheForwardAndSelectiveOnlyTheAttentionCore) {
  const CostModel costs = costs_for(data_parallel_8(0));
  const auto& layer = costs.units[1].by_mode;
  EXPECT_DOUBLE_EQ(layer[2].backward_s - layer[0].backward_s, layer[0].forward_s);
  EXPECT_GT(layer[1].backward_s, layer[0].backward_s);
  EXPECT_LT(layer[1].backward_s, layer[2].backward_s);
  EXPECT_LT(layer[2].activation_bytes, layer[1].activation_bytes);
  EXPECT_LE(layer[1].activation_bytes, layer[0].activation_bytes);
  // Every layer's backward has working memory (the MLP's, larger than the attention's here: 6
  // bytes a token per FFN unit); full recomputation also rebuilds the layer's activations for it.
  const int64_t backward_work = int64_t{6} * 4096 * 11008;
  EXPECT_EQ(layer[0].transient_bytes, backward_work);
  EXPECT_EQ(layer[2].transient_bytes, layer[0].activation_bytes + backward_work);
  // Selective: the recomputed attention core with the attention's backward, or the MLP's.
  EXPECT_GE(layer[1].transient_bytes, backward_work);
  EXPECT_LT(layer[1].transient_bytes, layer[2].transient_bytes);
}

// Every unit's seconds, split by kind of work, add up to its pass under every parallelism.
TEST(WorkKinds, AddUpToEveryUnitsForwardAndBackward) {
  ParallelConfig tp_sp;
  tp_sp.gpus = 16;
  tp_sp.tp = 4;
  tp_sp.sequence_parallel = true;
  tp_sp.zero_stage = 3;
  ParallelConfig cp;
  cp.gpus = 2;
  cp.cp = 2;
  ParallelConfig ep;
  ep.gpus = 4;
  ep.ep = 2;
  for (const auto& [model, c] : {std::pair{"llama2-7b", tp_sp},
                                 {"llama2-7b", cp},
                                 {"mixtral-8x7b", ep},
                                 {"gpt3-175b", data_parallel_8(1)}}) {
    const CostModel costs = costs_for(c, model);
    for (const UnitCost& unit : costs.units) {
      for (size_t mode = 0; mode < kRecomputeModes.size(); ++mode) {
        EXPECT_NEAR(unit.work_by_mode[mode].forward.total_s(), unit.by_mode[mode].forward_s,
                    1e-12 * unit.by_mode[mode].forward_s)
            << model << " " << unit.name << " mode " << mode;
        EXPECT_NEAR(unit.work_by_mode[mode].backward.total_s(), unit.by_mode[mode].backward_s,
                    1e-12 * unit.by_mode[mode].backward_s)
            << model << " " << unit.name << " mode " << mode;
      }
    }
  }
}

TEST(WorkKinds, ALayerOnOneGpuIsItsGemmsAttentionAndMemoryBoundKernels) {
  // llama2-7b, s 4096, b 1 on one GPU: the four linears (QKV 3h, output h, gate and up 2f, down)
  // at the profile's efficiency for each shape at its sustained clocks, three GEMMs each, the
  // backward's two in their own layouts; no collective.
  ParallelConfig c;
  c.seq_length = 4096;
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  const CostModel costs = costs_for(c);
  const TrainingLosses& losses = in.profile.losses;
  ASSERT_LT(losses.sustained_fraction(), 1);  // the A100 profile carries losses: they are priced below
  const double peak = in.cluster.gpu.peak_dense_bf16_flops_per_s;
  auto gemm_s = [&](double m, double n, double k) {
    return 2 * m * n * k /
           (peak * in.profile.gemm_efficiency(llround(m), llround(n), llround(k)) *
            losses.sustained_fraction());
  };
  const double t = 4096, h = 4096, f = 11008;
  double forward = 0, backward = 0;
  for (const auto& [out, in_features] :
       {std::pair{3 * h, h}, std::pair{h, h}, std::pair{2 * f, h}, std::pair{h, f}}) {
    forward += gemm_s(t, out, in_features);
    backward += gemm_s(t, in_features, out) * losses.dgrad_ratio() +
                gemm_s(in_features, out, t) * losses.wgrad_ratio();
  }
  const PassWork& layer = costs.units[1].work_by_mode[0];
  EXPECT_NEAR(layer.forward[WorkKind::kGemm], forward, 1e-12 * forward);
  EXPECT_NEAR(layer.backward[WorkKind::kGemm], backward, 1e-12 * backward);
  EXPECT_GT(layer.forward[WorkKind::kAttention], 0);
  EXPECT_GT(layer.forward[WorkKind::kMemoryBound], 0);
  EXPECT_EQ(layer.forward[WorkKind::kCommunication], 0);
  EXPECT_EQ(layer.backward[WorkKind::kCommunication], 0);
  // Tensor parallelism puts its collectives on the layer's critical path.
  c.gpus = 2;
  c.tp = 2;
  EXPECT_GT(costs_for(c).units[1].work_by_mode[0].forward[WorkKind::kCommunication], 0);
}

// llama2-7b, s 4096, b 1 over tp 8 (a dgx-a100 node per pipeline stage), under `framework`.
ParallelConfig tensor_parallel_8(TrainingFramework framework, bool sequence_parallel, int64_t pp = 1) {
  ParallelConfig c;
  c.gpus = 8 * pp;
  c.tp = 8;
  c.pp = pp;
  c.seq_length = 4096;
  c.sequence_parallel = sequence_parallel;
  c.framework = framework;
  return c;
}

TEST(TensorParallel, Megatron2022RunsTheColumnLinearsBackwardCollectivesBesideTheirGemms) {
  const PlanInputs in =
      test::inputs("llama2-7b", "dgx-a100", tensor_parallel_8(TrainingFramework::kMegatron2022, false));
  const TrainingLosses& losses = in.profile.losses;
  const double link = in.cluster.intra_node_bytes_per_s;
  const double activation_bytes = 4096.0 * 4096 * 2;
  auto collective_s = [&](CollectiveKind kind) {
    return in.profile.collective_time_s(kind, activation_bytes, 8, LinkTier::kIntraNode, link);
  };
  const double all_reduce = collective_s(CollectiveKind::kAllReduce);
  const double gather = collective_s(CollectiveKind::kAllGather);
  const double scatter = collective_s(CollectiveKind::kReduceScatter);
  const double peak = in.cluster.gpu.peak_dense_bf16_flops_per_s;
  auto gemm_s = [&](double m, double n, double k) {
    return 2 * m * n * k /
           (peak * in.profile.gemm_efficiency(llround(m), llround(n), llround(k)) *
            losses.sustained_fraction());
  };
  // The column-parallel linears: Q, K, V (3h / 8 wide) and gate and up (2f / 8), from h.
  const double t = 4096, h = 4096;
  const double columns[] = {3 * h / 8, 2 * 11008.0 / 8};
  const double slowdown = losses.overlap_gemm_slowdown.value;
  ASSERT_GT(slowdown, 0);

  // Without sequence parallelism: each input gradient's all-reduce beside its weight gradient.
  double backward = 0;
  for (const double out : columns)
    backward += exposed_beside_s(all_reduce, gemm_s(h, out, t) * losses.wgrad_ratio(), slowdown);
  const PassWork overlapped =
      costs_for(tensor_parallel_8(TrainingFramework::kMegatron2022, false)).units[1].work_by_mode[0];
  const PassWork in_turn =
      costs_for(tensor_parallel_8(TrainingFramework::kMegatron2021, false)).units[1].work_by_mode[0];
  EXPECT_NEAR(overlapped.forward[WorkKind::kCommunication], 2 * all_reduce, 1e-15);
  EXPECT_NEAR(in_turn.forward[WorkKind::kCommunication], 2 * all_reduce, 1e-15);
  EXPECT_NEAR(in_turn.backward[WorkKind::kCommunication], 2 * all_reduce, 1e-15);
  EXPECT_NEAR(overlapped.backward[WorkKind::kCommunication], backward, 1e-15);
  EXPECT_GT(backward, 0);
  EXPECT_LT(backward, all_reduce);

  // With it: the row-parallel linears' all-gathers exposed; the input's all-gather beside the
  // input gradient, its reduce-scatter beside the weight gradient.
  backward = 2 * gather;
  for (const double out : columns) {
    backward += exposed_beside_s(gather, gemm_s(t, h, out) * losses.dgrad_ratio(), slowdown) +
                exposed_beside_s(scatter, gemm_s(h, out, t) * losses.wgrad_ratio(), slowdown);
  }
  const PassWork sequence =
      costs_for(tensor_parallel_8(TrainingFramework::kMegatron2022, true)).units[1].work_by_mode[0];
  const PassWork sequence_in_turn =
      costs_for(tensor_parallel_8(TrainingFramework::kMegatron2021, true)).units[1].work_by_mode[0];
  EXPECT_NEAR(sequence.forward[WorkKind::kCommunication], 2 * (gather + scatter), 1e-15);
  EXPECT_NEAR(sequence.backward[WorkKind::kCommunication], backward, 1e-15);
  EXPECT_NEAR(sequence_in_turn.backward[WorkKind::kCommunication], 2 * (gather + scatter), 1e-15);
  EXPECT_LT(backward, 2 * (gather + scatter));
  // The GEMMs themselves are priced alike either way.
  EXPECT_DOUBLE_EQ(sequence.backward[WorkKind::kGemm], sequence_in_turn.backward[WorkKind::kGemm]);
}

TEST(Pipeline, Megatron2022SendsEachActivationAsTensorParallelShardsAndGathersThem) {
  // llama2-7b, s 4096, b 1, tp 8 and pp 2 on two dgx-a100 nodes: the stages are a node apart.
  auto config = [](TrainingFramework framework, bool sequence_parallel) {
    return tensor_parallel_8(framework, sequence_parallel, 2);
  };
  const PlanInputs in =
      test::inputs("llama2-7b", "dgx-a100", config(TrainingFramework::kMegatron2022, false));
  const double activation_bytes = 4096.0 * 4096 * 2;
  // One of the node's 8 pipeline pairs' share of its NICs, and the TP group's NVLink.
  const double nic_share = in.cluster.inter_node_bytes_per_s / 8;
  const double send_whole = in.profile.collective_time_s(CollectiveKind::kSendRecv, activation_bytes, 2,
                                                         LinkTier::kInterNode, nic_share);
  const double send_shard = in.profile.collective_time_s(CollectiveKind::kSendRecv, activation_bytes / 8, 2,
                                                         LinkTier::kInterNode, nic_share);
  const double gather = in.profile.collective_time_s(CollectiveKind::kAllGather, activation_bytes, 8,
                                                     LinkTier::kIntraNode, in.cluster.intra_node_bytes_per_s);
  const CostModel scattered = costs_for(config(TrainingFramework::kMegatron2022, false));
  EXPECT_NEAR(scattered.p2p_s, send_shard + gather, 1e-15);
  EXPECT_TRUE(scattered.p2p_blocks);
  EXPECT_NEAR(costs_for(config(TrainingFramework::kMegatron2022, true)).p2p_s, send_shard, 1e-15);
  EXPECT_NEAR(costs_for(config(TrainingFramework::kGeneric, true)).p2p_s, send_shard, 1e-15);
  const CostModel whole = costs_for(config(TrainingFramework::kGeneric, false));
  EXPECT_NEAR(whole.p2p_s, send_whole, 1e-15);
  EXPECT_FALSE(whole.p2p_blocks);
  EXPECT_LT(scattered.p2p_s, whole.p2p_s);
}

TEST(Pipeline, TiedEmbeddingsSumTheirGradientsBetweenTheFirstAndTheLastStageBeforeTheStep) {
  // gpt3-175b at tp 8, pp 2 on two dgx-a100 nodes: the word embedding's fp32 gradient (51,200 / 8
  // rows of 12,288) all-reduced between the two stages, a node apart, on both stages' step.
  ParallelConfig c = tensor_parallel_8(TrainingFramework::kGeneric, false, 2);
  c.seq_length = 2048;
  PlanInputs tied = test::inputs("gpt3-175b", "dgx-a100", c);
  ASSERT_TRUE(tied.model.tied_embeddings);
  PlanInputs untied = tied;
  untied.model.tied_embeddings = false;
  const auto with_sync = build_cost_model(tied);
  const auto without = build_cost_model(untied);
  ASSERT_TRUE(with_sync.ok() && without.ok());
  const double bytes = 51200.0 / 8 * 12288 * 4;
  const double sync_s = tied.profile
                            .collective_cost(CollectiveKind::kAllReduce, bytes, 2, 2, LinkTier::kInterNode,
                                             tied.cluster.inter_node_bytes_per_s / 8)
                            .total_s();
  EXPECT_GT(sync_s, 0);
  EXPECT_NEAR(with_sync->units.front().optimizer_s - without->units.front().optimizer_s, sync_s, 1e-12);
  // Without a pipeline the one copy needs no sum.
  tied.config.gpus = 8;
  tied.config.pp = 1;
  untied.config = tied.config;
  EXPECT_DOUBLE_EQ(build_cost_model(tied)->units.front().optimizer_s,
                   build_cost_model(untied)->units.front().optimizer_s);
}

TEST(WorkKinds, RecomputationRepeatsItsForwardsWorkInTheBackward) {
  const CostModel costs = costs_for(data_parallel_8(0));
  const auto& work = costs.units[1].work_by_mode;
  for (size_t k = 0; k < kWorkKinds; ++k) {
    const auto kind = static_cast<WorkKind>(k);
    // Selective: the attention core's forward again, nothing else.
    const double selective = kind == WorkKind::kAttention ? work[0].forward[kind] : 0;
    EXPECT_DOUBLE_EQ(work[1].backward[kind] - work[0].backward[kind], selective) << work_kind_name(kind);
    // Full: the whole forward again.
    EXPECT_NEAR(work[2].backward[kind] - work[0].backward[kind], work[0].forward[kind], 1e-15)
        << work_kind_name(kind);
  }
}

TEST(ContextParallel, TwoRanksHalveEveryLayerActivation) {
  // llama2-7b (h 4096, 32 heads of 128, SwiGLU f 11008, no dropout), s 4096, b 1, flash, no
  // recompute. Megatron's context parallelism keeps each rank's s/cp tokens of every tensor:
  // per token, attention 2h (norm output) + 2(h + h) (Q, K) + 2h (V) + 2h (core output) + 4 x 32
  // (fp32 log-sum-exp per head) = 41,088 bytes; MLP 2h + 2 x 2f (gate, up) + 2f = 74,240; two
  // norm inputs 4h = 16,384; 131,712 bytes a token.
  ParallelConfig c;
  c.seq_length = 4096;
  EXPECT_EQ(costs_for(c).units[1].by_mode[0].activation_bytes, 4096 * 131'712);
  c.gpus = 2;
  c.cp = 2;
  EXPECT_EQ(costs_for(c).units[1].by_mode[0].activation_bytes, 2048 * 131'712);
  // Full recomputation keeps each layer's input, s/cp x h x 2 bytes.
  EXPECT_EQ(costs_for(c).units[1].by_mode[2].activation_bytes, 2048 * 4096 * 2);
}

TEST(ExpertParallel, ShardsTheExpertsWeightsGradientsAndOptimizerState) {
  // mixtral-8x7b, one layer: attention h(h + 2 x 1024 + h) = 41,943,040, router 8h = 32,768,
  // norms 2h = 8,192, dense 41,984,000; 8 experts of 3 x 4096 x 14336 = 176,160,768 each.
  constexpr int64_t kDense = 41'984'000;
  constexpr int64_t kExpert = 176'160'768;
  ParallelConfig c;
  c.gpus = 2;  // dp 2, no ZeRO: 18 bytes a parameter; ep 2 keeps 4 of the 8 experts
  EXPECT_EQ(costs_for(c, "mixtral-8x7b").units[1].static_bytes, 18 * (kDense + 8 * kExpert));
  c.ep = 2;
  EXPECT_EQ(costs_for(c, "mixtral-8x7b").units[1].parameters, kDense + 4 * kExpert);
  EXPECT_EQ(costs_for(c, "mixtral-8x7b").units[1].static_bytes, 18 * (kDense + 4 * kExpert));
  // ZeRO-1 on 4 GPUs, ep 2: dense state sharded over dp 4 (2 + 4 + 12/4 = 9 bytes a parameter),
  // expert state over the 2 ranks holding the same experts (2 + 4 + 12/2 = 12).
  c.gpus = 4;
  c.zero_stage = 1;
  EXPECT_EQ(costs_for(c, "mixtral-8x7b").units[1].static_bytes, 9 * kDense + int64_t{12} * 4 * kExpert);
}

TEST(TensorParallel, SplitsComputeButPaysForItsAllReduces) {
  ParallelConfig tp1;
  tp1.gpus = 2;
  ParallelConfig tp2 = tp1;
  tp2.tp = 2;
  const double one = costs_for(tp1).units[1].by_mode[0].forward_s;
  const double two = costs_for(tp2).units[1].by_mode[0].forward_s;
  EXPECT_LT(two, one);
  EXPECT_GT(two, one / 2);
}

// The gradient all-reduce over two dgx-a100 nodes (8 x 200 Gb/s each). With tp 1 one group holds
// every GPU of both nodes, and NCCL's rings use all eight NICs of a node for it; with tp 8 eight
// groups (one per tensor-parallel rank) run at once, each with one GPU and so one NIC per node.
TEST(DataParallel, AGroupGetsTheNicsOfItsMembersOnEachNode) {
  const double node_nics = 8 * 200e9 / 8;  // bytes/s
  ParallelConfig whole_nodes;
  whole_nodes.gpus = 16;  // tp 1, dp 16
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", whole_nodes);
  const CostModel one_group = costs_for(whole_nodes);
  EXPECT_DOUBLE_EQ(one_group.units[1].dp_sync_s,
                   in.profile
                       .collective_cost(CollectiveKind::kAllReduce, 4 * kLayerParams, 16, 2,
                                        LinkTier::kInterNode, node_nics)
                       .total_s());
  ParallelConfig one_per_node = whole_nodes;
  one_per_node.tp = 8;  // dp 2, one member of each group per node
  const double layer_shard = static_cast<double>(costs_for(one_per_node).units[1].parameters);
  EXPECT_DOUBLE_EQ(costs_for(one_per_node).units[1].dp_sync_s,
                   in.profile
                       .collective_cost(CollectiveKind::kAllReduce, 4 * layer_shard, 2, 2,
                                        LinkTier::kInterNode, node_nics / 8)
                       .total_s());
}

// Across nodes a collective's latency grows with the ranks it passes (NCCL's tuning model): the
// same layer's gradients all-reduced over 128 nodes pay more latency than over 2, and more in all
// than the profile's one latency would say (NCCL then takes its tree, trading bandwidth for it).
TEST(DataParallel, TheSyncsLatencyGrowsWithTheNodesItCrosses) {
  ParallelConfig two_nodes;
  two_nodes.gpus = 16;
  ParallelConfig many_nodes;
  many_nodes.gpus = 1024;
  many_nodes.global_batch = 1024;
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", many_nodes);
  const double node_nics = 8 * 200e9 / 8;
  const double bytes = 4 * kLayerParams;
  const auto sync = [&](int ranks, int nodes) {
    return in.profile.collective_cost(CollectiveKind::kAllReduce, bytes, ranks, nodes, LinkTier::kInterNode,
                                      node_nics);
  };
  EXPECT_GT(sync(1024, 128).latency_s, sync(16, 2).latency_s);
  EXPECT_GT(sync(1024, 128).total_s(), sync(1024, 0).total_s() * 1.05);
  EXPECT_DOUBLE_EQ(costs_for(many_nodes).units[1].dp_sync_s, sync(1024, 128).total_s());
  EXPECT_GT(costs_for(many_nodes).units[1].dp_sync_s, costs_for(two_nodes).units[1].dp_sync_s);
}

TEST(TiedEmbeddings, LastStageKeepsACopyUnderPipelineParallelism) {
  ParallelConfig c;
  c.gpus = 16;
  c.tp = 8;
  c.pp = 2;
  const CostModel costs = costs_for(c, "gpt3-175b");
  EXPECT_GE(costs.units.back().parameters, costs.units.front().parameters);
  c.pp = 1;
  c.gpus = 8;
  EXPECT_LT(costs_for(c, "gpt3-175b").units.back().parameters, costs.units.front().parameters);
}

}  // namespace
}  // namespace pipescope::planner
