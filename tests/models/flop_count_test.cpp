// FLOP counts against the published formulas of Narayanan et al. 2021 and Korthikanti et al.
// 2022, and hand counts of grouped-query, SwiGLU and MoE layers.
#include <gtest/gtest.h>

#include <cstdint>

#include "bundled_model.h"
#include "pipescope/models/flop_count.h"

namespace pipescope::models {
namespace {

// A small GPT so that every count is an exact integer in a double.
ModelDesc small_gpt() {
  ModelDesc m;
  m.name = "small-gpt";
  m.vocab_size = 1000;
  m.hidden_size = 256;
  m.num_layers = 3;
  m.num_attention_heads = 8;
  m.num_kv_heads = 8;
  m.head_dim = 32;
  m.ffn_hidden_size = 1024;
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  return m;
}

TEST(FlopCount, NarayananFullRecomputeFormulaExactOnASmallGpt) {
  const ModelDesc m = small_gpt();
  const double B = 4, s = 128, l = 3, h = 256, V = 1000;
  // 96·B·s·l·h²·(1 + s/(6h) + V/(16lh)), multiplied out.
  const double expected = 96 * B * s * l * h * h + 16 * B * s * s * l * h + 6 * B * s * h * V;
  EXPECT_EQ(iteration_flops(m, 4, 128, RecomputeMode::kFull).hardware, expected);
}

TEST(FlopCount, NarayananFullRecomputeFormulaForGpt3) {
  const ModelDesc m = bundled("gpt3-175b");
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 50257;
  const double expected = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(iteration_flops(m, 1536, 2048, RecomputeMode::kFull).hardware / expected, 1.0, 1e-12);
}

TEST(FlopCount, ModelFlopsAreThreeForwardsWithoutRecomputation) {
  const ModelDesc m = small_gpt();
  const double B = 4, s = 128, l = 3, h = 256, V = 1000;
  // 72·B·s·l·h²·(1 + s/(6h) + V/(12lh)) (Korthikanti et al. 2022), multiplied out.
  const double expected = 72 * B * s * l * h * h + 12 * B * s * s * l * h + 6 * B * s * h * V;
  for (RecomputeMode mode : {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull}) {
    EXPECT_EQ(iteration_flops(m, 4, 128, mode).model, expected);
  }
  EXPECT_EQ(iteration_flops(m, 4, 128, RecomputeMode::kNone).hardware, expected);
}

TEST(FlopCount, SelectiveRecomputeRedoesTheAttentionCoreForward) {
  const ModelDesc m = small_gpt();
  const double B = 4, s = 128, l = 3, h = 256;
  const IterationFlops f = iteration_flops(m, 4, 128, RecomputeMode::kSelective);
  EXPECT_EQ(f.hardware - f.model, 4 * B * s * s * h * l);  // Q·K^T and scores·V per layer
}

TEST(FlopCount, TheAttentionCoreOfModelFlopsAndItsCausalHalf) {
  const ModelDesc m = small_gpt();
  const double B = 4, s = 128, l = 3, h = 256;
  const IterationFlops f = iteration_flops(m, 4, 128, RecomputeMode::kNone);
  // Korthikanti's 12·B·s²·l·h term: three passes of Q·K^T and scores·V over the full s x s.
  EXPECT_EQ(f.attention_core, 12 * B * s * s * l * h);
  // A causal mask computes the lower triangle only: FlashAttention's count halves that term.
  EXPECT_EQ(f.attention_core_causal, 6 * B * s * s * l * h);
  EXPECT_EQ(f.model_causal(), f.model - 6 * B * s * s * l * h);
}

TEST(FlopCount, ASlidingWindowCountsOnlyThePairsInsideIt) {
  ModelDesc m = small_gpt();
  const double B = 4, s = 128, l = 3, h = 256, w = 32;
  m.attention_window = {32, 32, 32};
  const IterationFlops f = iteration_flops(m, 4, 128, RecomputeMode::kNone);
  // Full convention: s x w pairs a head instead of s x s; causal: s·w - w²/2 (each query sees w).
  EXPECT_EQ(f.attention_core, 12 * B * s * w * l * h);
  EXPECT_EQ(f.attention_core_causal, 12 * B * (s * w - w * w / 2) * l * h);
  const IterationFlops full = iteration_flops(small_gpt(), 4, 128, RecomputeMode::kNone);
  EXPECT_EQ(full.model - f.model, 12 * B * s * (s - w) * l * h);
  // A window at least the sequence is no window.
  m.attention_window = {128, 0, 4096};
  EXPECT_EQ(iteration_flops(m, 4, 128, RecomputeMode::kNone).model, full.model);
}

TEST(FlopCount, BackwardIsTwiceForward) {
  CostOptions o;
  const LayerFlops f = layer_forward_flops(small_gpt(), 0, o);
  EXPECT_EQ(f.backward(), 2 * f.forward());
}

TEST(FlopCount, GroupedQuerySwiGluLayerOfLlama3) {
  const ModelDesc m = bundled("llama3-8b");
  CostOptions o;
  o.seq_length = 8192;
  o.micro_batch_size = 2;
  const double T = 2 * 8192.0, s = 8192, h = 4096, kv = 8 * 128, f = 14336;
  const LayerFlops flops = layer_forward_flops(m, 0, o);
  EXPECT_EQ(flops.attention_linear, 2 * T * h * (h + 2 * kv) + 2 * T * h * h);
  EXPECT_EQ(flops.attention_core, 2 * 2 * 2 * 32 * s * s * 128.0);  // 2 ops x b x a x 2·s·s·d
  EXPECT_EQ(flops.mlp, 3 * 2 * T * h * f);
  EXPECT_EQ(flops.router, 0);
}

TEST(FlopCount, MixtralCountsTopKExpertsAndTheRouter) {
  const ModelDesc m = bundled("mixtral-8x7b");
  CostOptions o;
  o.seq_length = 4096;
  const double T = 4096, h = 4096, f = 14336;
  const LayerFlops flops = layer_forward_flops(m, 0, o);
  EXPECT_EQ(flops.mlp, 2 * 3 * 2 * T * h * f);  // two experts of three matrices per token
  EXPECT_EQ(flops.router, 2 * T * h * 8);
}

TEST(FlopCount, TensorParallelRanksShareTheWorkExceptTheRouter) {
  const ModelDesc m = bundled("mixtral-8x7b");
  CostOptions whole;
  whole.seq_length = 4096;
  CostOptions split = whole;
  split.tensor_parallel = 4;
  const LayerFlops a = layer_forward_flops(m, 0, whole);
  const LayerFlops b = layer_forward_flops(m, 0, split);
  EXPECT_EQ(b.attention_linear * 4, a.attention_linear);
  EXPECT_EQ(b.attention_core * 4, a.attention_core);
  EXPECT_EQ(b.mlp * 4, a.mlp);
  EXPECT_EQ(b.router, a.router);
  split.sequence_parallel = true;  // the router then sees only the sequence shard
  EXPECT_EQ(layer_forward_flops(m, 0, split).router * 4, a.router);
}

TEST(FlopCount, LmHeadPerRankUsesThePaddedVocabulary) {
  const ModelDesc m = bundled("gpt3-175b");
  CostOptions o;
  o.seq_length = 2048;
  o.tensor_parallel = 8;
  EXPECT_EQ(lm_head_forward_flops(m, o), 2 * 2048.0 * 12288 * 6400);  // 50257 -> 51200 at t = 8: 6400 rows
}

TEST(FlopCount, RecomputeFlopsPerLayerFollowTheMode) {
  const ModelDesc m = small_gpt();
  CostOptions o;
  const LayerFlops f = layer_forward_flops(m, 0, o);
  EXPECT_EQ(layer_recompute_flops(m, 0, o), 0);
  o.recompute = RecomputeMode::kSelective;
  EXPECT_EQ(layer_recompute_flops(m, 0, o), f.attention_core);
  o.recompute = RecomputeMode::kFull;
  EXPECT_EQ(layer_recompute_flops(m, 0, o), f.forward());
}

}  // namespace
}  // namespace pipescope::models
