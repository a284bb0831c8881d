// Eager PyTorch's kernels between the GEMMs (eager_kernels.h), on small shapes whose bytes and
// launches are counted by hand, op by op, and what --framework pytorch-eager does to a plan.
#include "pipescope/planner/eager_kernels.h"

#include <gtest/gtest.h>

#include <utility>

#include "pipescope/models/model_catalog.h"

#include "pipescope/planner/cost_model.h"
#include "pipescope/planner/plan.h"
#include "planner_fixture.h"

namespace pipescope::planner {
namespace {

TEST(EagerKernels, ALayersForwardIsEveryOpReadAndWrittenOnce) {
  const eager::PassTraffic t = eager::layer(test::small_layer_shape());
  // bf16, 1000 tokens: two rms_norms (read 100, write 100 a token) and two residual adds (read
  // 200, write 100): 2 x 400 + 2 x 600 bytes a token.
  const double norms_and_adds = 1000 * (2 * 400 + 2 * 600);
  // Rotary on Q and on K: x cos (1 + 1), -x2 (0.5 + 0.5), cat (1 + 1), R(x) sin (1 + 1), the sum
  // (2 + 1): 10 elements of 2 bytes per element of the 100-wide tensor.
  const double rotary = 2 * 1000 * 100 * 10 * 2;
  const double v_contiguous = 1000 * 100 * 2 * 2;
  const double swiglu = 1000 * 300 * (2 + 3) * 2;  // SiLU (1 + 1), its product with up (2 + 1)
  EXPECT_DOUBLE_EQ(t.forward.bytes, norms_and_adds + rotary + v_contiguous + swiglu);
  EXPECT_DOUBLE_EQ(t.forward.kernels, 4 + 2 * 5 + 1 + 2);
}

TEST(EagerKernels, ALayersBackwardCountsTheFp32SwigluSliceBySlice) {
  const eager::PassTraffic t = eager::layer(test::small_layer_shape());
  // rms_norm's input gradient (read x and dy, write dx) and weight gradient (read both again),
  // twice; the two gradient sums where the residual stream forks (read 2, write 1).
  const double norms_and_sums = 1000 * 100 * 2 * (2 * 5 + 2 * 3);
  const double rotary = 2 * 1000 * 100 * 10 * 2;
  const double v_copy = 1000 * 100 * 2 * 2;
  const double qkv_cat = 1000 * 300 * 2 * 2;  // Q, K and V gradients into the fused projection's
  // Per FFN element: four casts up (2 + 4), three fp32 unary ops (4 + 4), six products (8 + 4),
  // two casts down (4 + 2); then gate and up gradients concatenated (2 + 2 elements of 2 bytes).
  const double swiglu = 1000 * 300 * (4 * 6 + 3 * 8 + 6 * 12 + 2 * 6) + 1000 * 300 * 4 * 2;
  EXPECT_DOUBLE_EQ(t.backward.bytes, norms_and_sums + rotary + v_copy + qkv_cat + swiglu);
  // 1,000 rows of 300 fit one slice of 4 M elements: fifteen kernels, and the concatenation.
  EXPECT_DOUBLE_EQ(t.backward.kernels, 6 + 2 * 5 + 1 + 1 + 15 + 1);

  eager::LayerShape wide = test::small_layer_shape();
  wide.ffn_width = 1 << 21;  // two rows a slice: 500 slices of fifteen kernels
  EXPECT_DOUBLE_EQ(eager::layer(wide).backward.kernels, 6 + 2 * 5 + 1 + 1 + 500 * 15 + 1);
}

TEST(EagerKernels, GroupedQueryAttentionRepeatsKAndVAndANonGatedMlpRunsGelu) {
  eager::LayerShape gqa = test::small_layer_shape();
  gqa.kv_width = 25;
  const eager::PassTraffic with_gqa = eager::layer(gqa);
  eager::LayerShape mha = gqa;
  mha.kv_width = 100;
  // repeat_interleave reads 25 and writes 100 elements a token, for K and for V.
  const double repeat = 2 * 1000 * (25 + 100) * 2;
  const double narrower = 1000 * 75 * (10 * 2 + 2 * 2);  // K's rotary and V's copy, 75 narrower
  EXPECT_DOUBLE_EQ(with_gqa.forward.bytes, eager::layer(mha).forward.bytes - narrower + repeat);

  eager::LayerShape gelu = test::small_layer_shape();
  gelu.gated_mlp = false;
  const eager::PassTraffic t = eager::layer(gelu);
  const eager::PassTraffic swiglu = eager::layer(test::small_layer_shape());
  EXPECT_DOUBLE_EQ(t.forward.bytes, swiglu.forward.bytes - 1000 * 300 * 10 + 1000 * 300 * 4);
  EXPECT_DOUBLE_EQ(t.forward.kernels, swiglu.forward.kernels - 1);
}

TEST(EagerKernels, TheHeadsFp32CrossEntropyAndTheEmbeddingsDenseGradient) {
  const eager::PassTraffic head = eager::head(10, 10, 4, 100);
  // rms_norm (2 + 2 bytes a hidden element); logits.float() (2 + 4) and log_softmax (4 + 4) on
  // 1,000 logits.
  EXPECT_DOUBLE_EQ(head.forward.bytes, 10 * 4 * 4 + 1000 * (6 + 8));
  // The fp32 gradient zeroed (4), log_softmax's backward (4 + 4 + 4), the cast down (4 + 2);
  // rms_norm's two gradients (10 bytes a hidden element).
  EXPECT_DOUBLE_EQ(head.backward.bytes, 1000 * (4 + 12 + 6) + 10 * 4 * 10);

  const eager::PassTraffic embedding = eager::embedding(10, 4, 1000);
  EXPECT_DOUBLE_EQ(embedding.forward.bytes, 10 * 4 * 4);
  // The whole 1,000 x 4 bf16 gradient zeroed, whatever the tokens, and 14 bytes a token element.
  EXPECT_DOUBLE_EQ(embedding.backward.bytes, 1000 * 4 * 2 + 10 * 4 * 14);
}

TEST(EagerKernels, CastsMixedDtypesAndLayoutCopiesAreTheUnvectorizedBytes) {
  const eager::PassTraffic t = eager::layer(test::small_layer_shape());
  // Forward: V made contiguous (1 + 1 elements of 2 bytes); no GQA repeat at kv = q.
  EXPECT_DOUBLE_EQ(t.forward.unvectorized_bytes, 1000 * 100 * 2 * 2);
  // Backward: V's gradient copied back, and the SwiGLU backward's four casts up (2 + 4) and two
  // casts down (4 + 2) per FFN element.
  EXPECT_DOUBLE_EQ(t.backward.unvectorized_bytes, 1000 * 100 * 2 * 2 + 1000 * 300 * (4 * 6 + 2 * 6));
  // Grouped-query attention repeats K and V into every head's layout (read kv, write q).
  eager::LayerShape gqa = test::small_layer_shape();
  gqa.kv_width = 25;
  EXPECT_DOUBLE_EQ(eager::layer(gqa).forward.unvectorized_bytes,
                   1000 * 25 * 2 * 2 + 1000 * (25 + 100) * 2 * 2);
  // The head's logits cast to fp32 and their gradient cast back: 6 bytes a logit each way.
  const eager::PassTraffic head = eager::head(10, 10, 4, 100);
  EXPECT_DOUBLE_EQ(head.forward.unvectorized_bytes, 1000 * 6);
  EXPECT_DOUBLE_EQ(head.backward.unvectorized_bytes, 1000 * 6);
  // The hooks add bf16 gradients into fp32 ones: all of it; fused Adam's multi-tensor kernels none.
  EXPECT_DOUBLE_EQ(eager::gradient_hooks(1000, 6).unvectorized_bytes, 1000 * 10);
  EXPECT_DOUBLE_EQ(eager::optimizer_step(1000).unvectorized_bytes, 0);
  EXPECT_DOUBLE_EQ(eager::embedding(10, 4, 1000).backward.unvectorized_bytes, 0);
}

TEST(EagerKernels, HooksAndTheOptimizerStepPerParameter) {
  EXPECT_DOUBLE_EQ(eager::gradient_hooks(1000, 6).bytes, 1000 * 10);
  EXPECT_DOUBLE_EQ(eager::gradient_hooks(1000, 6).kernels, 6);
  const double one_launch = 320.0 * 65536;
  EXPECT_DOUBLE_EQ(eager::optimizer_step(one_launch).bytes, one_launch * 38);
  EXPECT_DOUBLE_EQ(eager::optimizer_step(one_launch).kernels, 3);
  EXPECT_DOUBLE_EQ(eager::optimizer_step(one_launch + 1).kernels, 6);
}

// llama2-7b on eight H100s; the bundled profile's launch gap left out, each test setting its own.
PlanInputs eager_inputs(TrainingFramework framework) {
  ParallelConfig c;
  c.gpus = 8;
  c.micro_batch = 1;
  c.global_batch = 64;
  c.seq_length = 4096;
  c.zero_stage = 1;
  c.framework = framework;
  PlanInputs in = test::inputs("llama2-7b", "dgx-h100", c);
  in.profile.losses.launch_gap_s = {};
  return in;
}

TEST(EagerKernels, PyTorchEagerPricesMoreMemoryBoundWorkAndTheFusedAdamsStep) {
  const auto generic = build_cost_model(eager_inputs(TrainingFramework::kGeneric));
  const auto eager_model = build_cost_model(eager_inputs(TrainingFramework::kPyTorchEager));
  ASSERT_TRUE(generic.ok() && eager_model.ok());
  const UnitCost& fused = generic->units[1];
  const UnitCost& unfused = eager_model->units[1];
  // GEMMs and attention are the same kernels; the memory-bound work between them is not.
  EXPECT_DOUBLE_EQ(unfused.work_by_mode[0].forward[WorkKind::kGemm],
                   fused.work_by_mode[0].forward[WorkKind::kGemm]);
  EXPECT_GT(unfused.work_by_mode[0].forward[WorkKind::kMemoryBound],
            2 * fused.work_by_mode[0].forward[WorkKind::kMemoryBound]);
  EXPECT_GT(unfused.work_by_mode[0].backward[WorkKind::kMemoryBound],
            4 * fused.work_by_mode[0].backward[WorkKind::kMemoryBound]);
  // Adam (28 bytes a parameter), the bf16 copy (6) and the gradient zeroing (4), all on the ZeRO-1
  // shard, against Megatron-LM's step: the gradient norm, Adam and the copy on the shard (38) and
  // the zeroing of its whole fp32 gradient buffer (4 a parameter of the 8 ranks').
  EXPECT_NEAR(unfused.optimizer_s / fused.optimizer_s, 38.0 / (38.0 + 4 * 8), 1e-12);
  bool noted = false;
  for (const std::string& note : eager_model->notes) noted = noted || note.rfind("pytorch-eager:", 0) == 0;
  EXPECT_TRUE(noted);
}

TEST(EagerKernels, AnExplicitOptimizerKeepsItsOwnStepAndAccumulation) {
  // pytorch-eager's step and hooks are those of Megatron-LM's recipe, which the example runs; an
  // explicit --optimizer deepspeed-bf16 is priced as DeepSpeed's, with eager kernels in the layers.
  PlanInputs eager_deepspeed = eager_inputs(TrainingFramework::kPyTorchEager);
  eager_deepspeed.config.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  PlanInputs fused_deepspeed = eager_inputs(TrainingFramework::kGeneric);
  fused_deepspeed.config.optimizer = OptimizerRecipe::kDeepSpeedBf16;
  const auto eager_costs = build_cost_model(eager_deepspeed);
  const auto fused_costs = build_cost_model(fused_deepspeed);
  ASSERT_TRUE(eager_costs.ok() && fused_costs.ok());
  EXPECT_DOUBLE_EQ(eager_costs->units[1].optimizer_s, fused_costs->units[1].optimizer_s);
  // DeepSpeed's accumulation into its fp32 buffer (read 2 + 4, write 4) moves the same 10 bytes a
  // parameter as the example's hooks (read 4 + 2, write 4): the layer's memory-bound backward is
  // the same under either recipe, and no hook is launched under DeepSpeed's.
  const auto eager_megatron = build_cost_model(eager_inputs(TrainingFramework::kPyTorchEager));
  ASSERT_TRUE(eager_megatron.ok());
  EXPECT_NEAR(eager_costs->units[1].work_by_mode[0].backward[WorkKind::kMemoryBound],
              eager_megatron->units[1].work_by_mode[0].backward[WorkKind::kMemoryBound], 1e-12);
  PlanInputs gapped = eager_deepspeed;
  gapped.profile.losses.launch_gap_s = {1e-6, "measured: test"};
  const auto gapped_costs = build_cost_model(gapped);
  ASSERT_TRUE(gapped_costs.ok());
  EXPECT_NEAR(gapped_costs->units[1].work_by_mode[0].backward[WorkKind::kLaunchGap], (201 - 6) * 1e-6, 1e-15);
}

TEST(EagerKernels, EveryKernelLaunchedCostsTheProfilesLaunchGap) {
  PlanInputs in = eager_inputs(TrainingFramework::kPyTorchEager);
  in.profile.losses.launch_gap_s = {1e-6, "measured: test"};
  const auto costs = build_cost_model(in);
  ASSERT_TRUE(costs.ok()) << costs.error().message;
  const UnitCost& layer = costs->units[1];
  // llama2-7b, 4,096 tokens. Forward: 17 memory-bound kernels, 4 GEMMs, the attention kernel.
  EXPECT_NEAR(layer.work_by_mode[0].forward[WorkKind::kLaunchGap], 22e-6, 1e-15);
  // Backward: 6 norm and sum kernels, 10 rotary, V's copy, the Q/K/V concatenation, 11 slices of
  // 381 rows (4 M elements / 11,008) at 15 kernels, the gate/up concatenation; 8 GEMMs, 3 attention
  // kernels and 6 main-gradient hooks.
  EXPECT_NEAR(layer.work_by_mode[0].backward[WorkKind::kLaunchGap],
              (6 + 10 + 1 + 1 + 165 + 1 + 8 + 3 + 6) * 1e-6, 1e-15);
  // Recomputation launches the attention kernel again (selective) or the whole forward (full).
  EXPECT_NEAR(layer.work_by_mode[1].backward[WorkKind::kLaunchGap], 202e-6, 1e-15);
  EXPECT_NEAR(layer.work_by_mode[2].backward[WorkKind::kLaunchGap], 223e-6, 1e-15);
  bool noted = false;
  for (const std::string& note : costs->notes)
    noted = noted || note.find("1.00 us of GPU time per kernel") != std::string::npos;
  EXPECT_TRUE(noted);

  // Only where the planner knows the kernels: Megatron-LM's fused layer prices no gap.
  PlanInputs fused = eager_inputs(TrainingFramework::kGeneric);
  fused.profile.losses.launch_gap_s = {1e-6, "measured: test"};
  const auto fused_costs = build_cost_model(fused);
  ASSERT_TRUE(fused_costs.ok());
  for (const UnitCost& unit : fused_costs->units) {
    EXPECT_EQ(unit.work_by_mode[0].forward[WorkKind::kLaunchGap], 0) << unit.name;
    EXPECT_EQ(unit.work_by_mode[0].backward[WorkKind::kLaunchGap], 0) << unit.name;
  }
  // A profile that did not measure it prices none.
  const auto unmeasured = build_cost_model(eager_inputs(TrainingFramework::kPyTorchEager));
  ASSERT_TRUE(unmeasured.ok());
  EXPECT_EQ(unmeasured->units[1].work_by_mode[0].backward[WorkKind::kLaunchGap], 0);
}

TEST(EagerKernels, PyTorchsMeasuredKernelsCostTheirFixedTimeAndTheUnvectorizedBandwidth) {
  const PlanInputs plain = eager_inputs(TrainingFramework::kPyTorchEager);
  PlanInputs measured = plain;
  measured.profile.losses.eager_kernel_fixed_s = {2e-6, "measured: test"};
  measured.profile.losses.unvectorized_bandwidth_fraction = {0.5, "measured: test"};
  const auto before = build_cost_model(plain);
  const auto after = build_cost_model(measured);
  ASSERT_TRUE(before.ok() && after.ok());
  // llama2-7b, 4,096 tokens on one GPU: each memory-bound kernel costs 2 us more, and its
  // unvectorized bytes take twice as long. Forward: 17 kernels; V made contiguous, 2 x 4,096 x
  // 4,096 x 2 bytes.
  const double bandwidth = plain.profile.memory_bound_bytes_per_s(plain.cluster.gpu);
  const double v_copy = 2.0 * 4096 * 4096 * 2;
  EXPECT_NEAR(after->units[1].work_by_mode[0].forward[WorkKind::kMemoryBound] -
                  before->units[1].work_by_mode[0].forward[WorkKind::kMemoryBound],
              17 * 2e-6 + v_copy / bandwidth, 1e-12);
  // Backward: 6 + 10 + 1 + 1 + 165 + 1 kernels and 6 hooks; V's gradient copy, the SwiGLU's casts
  // (36 bytes an FFN element) and the hooks' 10 bytes a parameter.
  const double params = static_cast<double>(before->units[1].parameters);
  const double unvectorized = v_copy + 4096.0 * 11008 * 36 + params * 10;
  EXPECT_NEAR(after->units[1].work_by_mode[0].backward[WorkKind::kMemoryBound] -
                  before->units[1].work_by_mode[0].backward[WorkKind::kMemoryBound],
              (184 + 6) * 2e-6 + unvectorized / bandwidth, 1e-12);
  int said = 0;
  for (const std::string& note : after->notes) {
    said += note.find("PyTorch's kernels 2.00 us each beyond their bytes") != std::string::npos;
    said += note.find("casts and layout copies at 0.50 of the memory-bound bandwidth") != std::string::npos;
  }
  EXPECT_EQ(said, 2);
  // Megatron-LM's fused layer is not PyTorch's kernels: unchanged.
  PlanInputs fused = eager_inputs(TrainingFramework::kGeneric);
  const auto fused_before = build_cost_model(fused);
  fused.profile.losses = measured.profile.losses;
  const auto fused_after = build_cost_model(fused);
  ASSERT_TRUE(fused_before.ok() && fused_after.ok());
  EXPECT_DOUBLE_EQ(fused_after->units[1].work_by_mode[0].backward[WorkKind::kMemoryBound],
                   fused_before->units[1].work_by_mode[0].backward[WorkKind::kMemoryBound]);
}

// The frameworks whose kernels the planner lists are dense decoders': each refuses a mixture of
// experts in one line that names it and says whose kernels it prices.
TEST(EagerKernels, FrameworksWithListedKernelsRefuseAMixtureOfExperts) {
  auto model = models::load_model("mixtral-8x7b");
  ASSERT_TRUE(model.ok());
  for (const auto& [framework, says] :
       {std::pair{TrainingFramework::kPyTorchEager,
                  "--framework pytorch-eager prices a dense decoder "
                  "(examples/llama_train_step.py's kernels); mixtral-8x7b"},
        std::pair{TrainingFramework::kInternLM2023,
                  "--framework internlm-2023 prices a dense decoder (InternLM's "
                  "kernels of 2023, which had no experts"}}) {
    ParallelConfig c;
    c.gpus = 8;
    c.tp = 8;
    c.framework = framework;
    const auto resolved = resolve_config(*model, c);
    ASSERT_FALSE(resolved.ok());
    EXPECT_NE(resolved.error().message.find(says), std::string::npos) << resolved.error().message;
  }
  ParallelConfig megatron;
  megatron.gpus = 8;
  megatron.tp = 8;
  megatron.framework = TrainingFramework::kMegatronCore;
  EXPECT_TRUE(resolve_config(*model, megatron).ok());
}

}  // namespace
}  // namespace pipescope::planner
