// InternLM of 2023's kernels between the GEMMs (internlm_kernels.h), on small shapes whose bytes
// and launches are counted by hand, op by op, and what --framework internlm-2023 does to a plan.
#include "pipescope/planner/internlm_kernels.h"

#include <gtest/gtest.h>

#include <string>

#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/cost_model.h"
#include "pipescope/planner/plan.h"
#include "planner_fixture.h"

namespace pipescope::planner {
namespace {

TEST(InternLMKernels, ALayersForwardCastsTheStreamToFp32BeforeEachNorm) {
  const eager::PassTraffic t = internlm2023::layer(test::small_layer_shape());
  // Per token and norm: residual.float() (read 100 x 2, write 100 x 4), the fp32-input RMSNorm
  // (read 100 x 4, write 100 x 2), a residual add (read 2 x 100 x 2, write 100 x 2).
  const double per_norm = 1000 * (600 + 600 + 600);
  // flash-attn's rotary in place on Q and on K: read and write 100 elements of 2 bytes each.
  const double rotary = 2 * 1000 * 100 * 2 * 2;
  // SiLU (read 300, write 300) and its product with w2's output (read 600, write 300), bf16.
  const double swiglu = 1000 * 300 * (2 + 3) * 2;
  EXPECT_DOUBLE_EQ(t.forward.bytes, 2 * per_norm + rotary + swiglu);
  EXPECT_DOUBLE_EQ(t.forward.kernels, 2 * 3 + 2 + 2);
  // The casts are the unvectorized part.
  EXPECT_DOUBLE_EQ(t.forward.unvectorized_bytes, 2 * 1000 * 600);
}

TEST(InternLMKernels, ALayersBackwardWorksOnTheFp32Stream) {
  const eager::PassTraffic t = internlm2023::layer(test::small_layer_shape());
  // Per norm: its input gradient (read x in fp32 and dy, write dx in fp32: 4 + 2 + 4 bytes an
  // element) and weight-gradient partials (read both again: 4 + 2), in three kernels; the cast's
  // gradient back to bf16 (4 + 2); the gradient sum at the stream's fork (2 + 2 + 2).
  const double per_norm = 1000 * 100 * (10 + 6 + 6 + 6);
  const double rotary = 2 * 1000 * 100 * 2 * 2;
  // The product's two gradients and SiLU's backward (each reads two, writes one bf16 FFN
  // element); w1's and w2's input gradients summed (read two, write one hidden element).
  const double swiglu = 3 * 1000 * 300 * 6 + 1000 * 100 * 6;
  EXPECT_DOUBLE_EQ(t.backward.bytes, 2 * per_norm + rotary + swiglu);
  EXPECT_DOUBLE_EQ(t.backward.kernels, 2 * (3 + 1 + 1) + 2 + 3 + 1);
  EXPECT_DOUBLE_EQ(t.backward.unvectorized_bytes, 2 * 1000 * 600);
}

TEST(InternLMKernels, DropoutAndANonGatedMlp) {
  eager::LayerShape with_dropout = test::small_layer_shape();
  with_dropout.dropout = true;
  const eager::PassTraffic base = internlm2023::layer(test::small_layer_shape());
  const eager::PassTraffic dropped = internlm2023::layer(with_dropout);
  // Two dropouts on the stream: read and write 2 bytes and a one-byte mask, each way.
  EXPECT_DOUBLE_EQ(dropped.forward.bytes - base.forward.bytes, 2 * 1000 * 100 * 5);
  EXPECT_DOUBLE_EQ(dropped.backward.bytes - base.backward.bytes, 2 * 1000 * 100 * 5);
  EXPECT_DOUBLE_EQ(dropped.forward.kernels - base.forward.kernels, 2);

  eager::LayerShape gelu = test::small_layer_shape();
  gelu.gated_mlp = false;
  const eager::PassTraffic fused_mlp = internlm2023::layer(gelu);
  // FusedMLP's GELU lives in the GEMMs' epilogues: only the pre-activation's write and read.
  EXPECT_DOUBLE_EQ(fused_mlp.forward.bytes, base.forward.bytes - 1000 * 300 * 10 + 1000 * 300 * 2);
  EXPECT_DOUBLE_EQ(fused_mlp.backward.bytes,
                   base.backward.bytes - (3 * 1000 * 300 * 6 + 1000 * 100 * 6) + 1000 * 300 * 2);
  EXPECT_DOUBLE_EQ(fused_mlp.forward.kernels, base.forward.kernels - 2);
}

TEST(InternLMKernels, TheCheckpointedDropoutAndNormFunctionsAndTheHead) {
  // Both functions again: a cast and a norm each (600 + 600 bytes a token), and the second one's
  // residual add (600).
  const eager::Traffic again = internlm2023::norm_recompute(test::small_layer_shape());
  EXPECT_DOUBLE_EQ(again.bytes, 1000 * (2 * 1200 + 600));
  EXPECT_DOUBLE_EQ(again.kernels, 5);

  const eager::PassTraffic head = internlm2023::head(10, 10, 4, 100);
  // The cast and the fp32-input norm (6 + 6 bytes a hidden element); the loss reads the 1,000
  // bf16 logits once, and its backward writes their gradient over them (read 2, write 2).
  EXPECT_DOUBLE_EQ(head.forward.bytes, 10 * 4 * 12 + 1000 * 2);
  EXPECT_DOUBLE_EQ(head.backward.bytes, 1000 * 4 + 10 * 4 * (16 + 6));
}

// InternLM's 7B (the V09 runs' model shape, llama2-7b's here) on eight A100s.
PlanInputs internlm_inputs(TrainingFramework framework) {
  ParallelConfig c;
  c.gpus = 8;
  c.micro_batch = 2;
  c.global_batch = 64;
  c.seq_length = 2048;
  c.zero_stage = 1;
  c.framework = framework;
  return test::inputs("llama2-7b", "dgx-a100", c);
}

TEST(InternLMKernels, InternLM2023PricesItsOwnKernelsAndRunsTheNormsAgainUnlessRecomputedWhole) {
  const auto internlm = build_cost_model(internlm_inputs(TrainingFramework::kInternLM2023));
  const auto internevo = build_cost_model(internlm_inputs(TrainingFramework::kInternEvo));
  ASSERT_TRUE(internlm.ok() && internevo.ok());
  const UnitCost& own = internlm->units[1];
  const UnitCost& fused = internevo->units[1];
  // Megatron-LM's fused layer moves 8 + 12 bytes a hidden element through its norms and adds and
  // 6 per FFN element forward; InternLM's casts and fp32-input norms move 36 and its eager SwiGLU 10.
  const double hidden = 4096, ffn = 11008, rotary = 8 * 4096;
  const double ratio = (36 * hidden + rotary + 10 * ffn) / (20 * hidden + rotary + 6 * ffn);
  EXPECT_NEAR(own.work_by_mode[0].forward[WorkKind::kMemoryBound] /
                  fused.work_by_mode[0].forward[WorkKind::kMemoryBound],
              ratio, 1e-9);
  // The checkpointed dropout-and-norm functions run again in the backward of a layer that is not
  // recomputed whole (modes none and selective), not under full recomputation, which redoes all.
  const double norms_again = 4096.0 * 2 * (2 * 12 * hidden + 6 * hidden);
  const double forward_mb = own.work_by_mode[0].forward[WorkKind::kMemoryBound];
  const double forward_bytes = 2 * 4096.0 * (36 * hidden + rotary + 10 * ffn);
  const double s_per_byte = forward_mb / forward_bytes;
  const double backward_bytes = 2 * 4096.0 * (56 * hidden + rotary + 18 * ffn + 6 * hidden);
  EXPECT_NEAR(own.work_by_mode[0].backward[WorkKind::kMemoryBound],
              (backward_bytes + norms_again) * s_per_byte, 1e-12);
  EXPECT_NEAR(own.work_by_mode[2].backward[WorkKind::kMemoryBound],
              (backward_bytes + forward_bytes) * s_per_byte, 1e-12);
  // w1 and w2 are GEMMs of their own, each half of the fused gate-up projection's width.
  EXPECT_GE(own.work_by_mode[0].forward[WorkKind::kGemm], fused.work_by_mode[0].forward[WorkKind::kGemm]);
  bool noted = false;
  for (const std::string& note : internlm->notes) noted = noted || note.rfind("internlm-2023:", 0) == 0;
  EXPECT_TRUE(noted);
}

TEST(InternLMKernels, TheLossReadsBf16LogitsOnceAndTheHeadCastsTheStream) {
  const auto internlm = build_cost_model(internlm_inputs(TrainingFramework::kInternLM2023));
  const auto internevo = build_cost_model(internlm_inputs(TrainingFramework::kInternEvo));
  ASSERT_TRUE(internlm.ok() && internevo.ok());
  const UnitCost& own = internlm->units.back();
  const UnitCost& fused = internevo->units.back();
  // 4,096 tokens of 4,096 into 32,000 logits. Forward: Megatron-LM's norm (2 + 2 bytes a hidden
  // element) and its cross entropy on fp32 logits (16 bytes a logit) against the cast and the
  // fp32-input norm (6 + 6) and flash-attn's loss reading bf16 logits once (2).
  const double stream = 4096.0 * 4096, logits = 4096.0 * 32000;
  const double fused_forward = 4 * stream + 16 * logits, own_forward = 12 * stream + 2 * logits;
  const double s_per_byte = own.work_by_mode[0].forward[WorkKind::kMemoryBound] / own_forward;
  EXPECT_NEAR(fused.work_by_mode[0].forward[WorkKind::kMemoryBound], fused_forward * s_per_byte, 1e-12);
  // Backward (the same gradient accumulation beside it under both): 8 bytes a hidden element and
  // 8 a logit against the norm's two gradients and the cast back (22) and the in-place loss
  // gradient (4).
  EXPECT_NEAR(fused.work_by_mode[0].backward[WorkKind::kMemoryBound] -
                  own.work_by_mode[0].backward[WorkKind::kMemoryBound],
              ((8 * stream + 8 * logits) - (22 * stream + 4 * logits)) * s_per_byte, 1e-12);
}

TEST(InternLMKernels, EveryKernelLaunchedCostsTheProfilesLaunchGap) {
  PlanInputs in = internlm_inputs(TrainingFramework::kInternLM2023);
  in.profile.losses.launch_gap_s = {1e-6, "measured: test"};
  const auto costs = build_cost_model(in);
  ASSERT_TRUE(costs.ok()) << costs.error().message;
  const UnitCost& layer = costs->units[1];
  // Forward: 10 memory-bound kernels, 5 GEMMs (w1 and w2 apart), the attention kernel.
  EXPECT_NEAR(layer.work_by_mode[0].forward[WorkKind::kLaunchGap], 16e-6, 1e-15);
  // Backward: 16 memory-bound kernels, 10 GEMMs, 3 attention kernels, and the 5 kernels of the
  // checkpointed dropout-and-norm functions; under full recomputation the whole forward instead.
  EXPECT_NEAR(layer.work_by_mode[0].backward[WorkKind::kLaunchGap], 34e-6, 1e-15);
  EXPECT_NEAR(layer.work_by_mode[2].backward[WorkKind::kLaunchGap], 45e-6, 1e-15);
}

}  // namespace
}  // namespace pipescope::planner
