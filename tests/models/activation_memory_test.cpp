// Activation bytes per layer against Korthikanti et al. 2022 (arXiv 2205.05198), Table 2, and
// the generalizations derived in activation_memory.cpp. Every expected value is written from the
// formula in the test, never taken from the code's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bundled_model.h"
#include "pipescope/models/activation_memory.h"

namespace pipescope::models {
namespace {

// The paper's model: GPT with a GELU MLP of 4h, multi-head attention, dropout, LayerNorm.
ModelDesc gpt_like(int64_t h, int64_t a) {
  ModelDesc m;
  m.name = "korthikanti-gpt";
  m.vocab_size = 51200;
  m.hidden_size = h;
  m.num_layers = 1;
  m.num_attention_heads = a;
  m.num_kv_heads = a;
  m.head_dim = h / a;
  m.ffn_hidden_size = 4 * h;
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearned;
  m.max_position_embeddings = 2048;
  m.tied_embeddings = true;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
  m.attention_dropout = m.hidden_dropout = 0.1;
  return m;
}

struct Case {
  int64_t s, b, h, a, t;
};

// Chosen so that every term of Table 2 is an integer; the first is GPT-3 175B at t = 8 (the
// paper's Table 3), the last has no tensor parallelism.
const std::vector<Case> kCases = {
    {2048, 1, 12288, 96, 8}, {2048, 4, 4096, 32, 4}, {1024, 2, 2048, 16, 2}, {512, 3, 1536, 12, 1}};

int64_t bytes(const ModelDesc& m, const Case& c, bool sp, RecomputeMode recompute, bool flash = false) {
  CostOptions o;
  o.seq_length = c.s;
  o.micro_batch_size = c.b;
  o.tensor_parallel = c.t;
  o.sequence_parallel = sp;
  o.recompute = recompute;
  o.flash_attention = flash;
  EXPECT_TRUE(check_cost_options(m, o).ok());
  return layer_activation_bytes(m, 0, o).total_bytes();
}

TEST(ActivationMemory, KorthikantiTable2NoParallelism) {
  for (const Case& c : kCases) {
    const int64_t sbh = c.s * c.b * c.h;
    // sbh(34 + 5as/h) = 34sbh + 5as²b
    EXPECT_EQ(bytes(gpt_like(c.h, c.a), {c.s, c.b, c.h, c.a, 1}, false, RecomputeMode::kNone),
              34 * sbh + 5 * c.a * c.s * c.s * c.b);
  }
}

TEST(ActivationMemory, KorthikantiTable2TensorParallel) {
  for (const Case& c : kCases) {
    const int64_t sbh = c.s * c.b * c.h;
    // sbh(10 + 24/t + 5as/(ht))
    EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, false, RecomputeMode::kNone),
              10 * sbh + 24 * sbh / c.t + 5 * c.a * c.s * c.s * c.b / c.t);
  }
}

TEST(ActivationMemory, KorthikantiTable2TensorSequenceParallel) {
  for (const Case& c : kCases) {
    const int64_t sbh = c.s * c.b * c.h;
    // sbh(34/t + 5as/(ht))
    EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, true, RecomputeMode::kNone),
              34 * sbh / c.t + 5 * c.a * c.s * c.s * c.b / c.t);
  }
}

TEST(ActivationMemory, KorthikantiTable2TensorParallelSelective) {
  for (const Case& c : kCases) {
    const int64_t sbh = c.s * c.b * c.h;
    // sbh(10 + 24/t)
    EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, false, RecomputeMode::kSelective), 10 * sbh + 24 * sbh / c.t);
  }
}

TEST(ActivationMemory, KorthikantiTable2TensorSequenceParallelSelective) {
  for (const Case& c : kCases) {
    const int64_t sbh = c.s * c.b * c.h;
    // sbh(34/t)
    EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, true, RecomputeMode::kSelective), 34 * sbh / c.t);
  }
}

TEST(ActivationMemory, KorthikantiTable2FullRecompute) {
  for (const Case& c : kCases) {
    // sbh·2: the layer input only, whatever the tensor parallel size.
    EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, false, RecomputeMode::kFull), 2 * c.s * c.b * c.h);
  }
}

TEST(ActivationMemory, FullRecomputeWithSequenceParallelKeepsTheInputShard) {
  const Case c{2048, 2, 4096, 32, 4};
  EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, true, RecomputeMode::kFull), 2 * c.s * c.b * c.h / c.t);
}

TEST(ActivationMemory, BreakdownMatchesThePaperSection4) {
  // Section 4.1: attention 11sbh + 5as²b, MLP 19sbh, the two LayerNorms 4sbh.
  const Case c{1024, 2, 2048, 16, 1};
  CostOptions o;
  o.seq_length = c.s;
  o.micro_batch_size = c.b;
  const LayerActivations a = layer_activation_bytes(gpt_like(c.h, c.a), 0, o);
  const int64_t sbh = c.s * c.b * c.h;
  EXPECT_EQ(a.attention_bytes, 11 * sbh + 5 * c.a * c.s * c.s * c.b);
  EXPECT_EQ(a.mlp_bytes, 19 * sbh);
  EXPECT_EQ(a.norm_bytes, 4 * sbh);
  EXPECT_EQ(a.checkpoint_bytes, 0);
}

TEST(ActivationMemory, WithoutDropoutTheMasksAndTheDropoutOutputVanish) {
  ModelDesc m = gpt_like(2048, 16);
  m.attention_dropout = m.hidden_dropout = 0.0;
  const Case c{1024, 2, 2048, 16, 1};
  const int64_t sbh = c.s * c.b * c.h;
  // 34sbh less two sbh masks; of 5as²b only the 2-byte softmax output is left.
  EXPECT_EQ(bytes(m, c, false, RecomputeMode::kNone), 32 * sbh + 2 * c.a * c.s * c.s * c.b);
}

TEST(ActivationMemory, FlashAttentionKeepsSoftmaxStatisticsInsteadOfScores) {
  const Case c{2048, 4, 4096, 32, 4};
  const int64_t sbh = c.s * c.b * c.h;
  // No s² term; fp32 log-sum-exp per head and token: 4·a·s·b bytes, heads split by t.
  EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, true, RecomputeMode::kNone, true),
            34 * sbh / c.t + 4 * c.a * c.s * c.b / c.t);
  EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, false, RecomputeMode::kNone, true),
            10 * sbh + 24 * sbh / c.t + 4 * c.a * c.s * c.b / c.t);
  // Selective recomputation of a flash core keeps neither.
  EXPECT_EQ(bytes(gpt_like(c.h, c.a), c, true, RecomputeMode::kSelective, true), 34 * sbh / c.t);
}

TEST(ActivationMemory, RmsNormKeepsItsInputLikeLayerNorm) {
  ModelDesc m = gpt_like(2048, 16);
  const Case c{1024, 2, 2048, 16, 2};
  const int64_t layer_norm = bytes(m, c, true, RecomputeMode::kNone);
  m.norm = NormKind::kRmsNorm;
  EXPECT_EQ(bytes(m, c, true, RecomputeMode::kNone), layer_norm);
}

TEST(ActivationMemory, Llama2SwiGluWithoutDropout) {
  const ModelDesc m = bundled("llama2-7b");
  const int64_t s = 4096, b = 1, h = 4096, a = 32, f = 11008;
  // Norm inputs 4sbh; attention: QKV input 2sbh, Q K V 6sbh, output projection input 2sbh,
  // softmax output 2as²b; MLP: input 2sbh, fused SwiGLU input 2·2sbf, down projection input 2sbf.
  const int64_t expected = 4 * s * b * h + 10 * s * b * h + 2 * a * s * s * b + 2 * s * b * h + 6 * s * b * f;
  EXPECT_EQ(bytes(m, {s, b, h, a, 1}, false, RecomputeMode::kNone), expected);
}

TEST(ActivationMemory, Llama3GroupedQueryFlashTensorSequenceParallel) {
  const ModelDesc m = bundled("llama3-8b");
  // h 4096, 32 query heads and 8 K/V heads of 128, f 14336; t = 4: 8 query and 2 K/V heads.
  const int64_t s = 8192, b = 1, h = 4096, t = 4, f = 14336;
  const int64_t q = int64_t{8} * 128, kv = int64_t{2} * 128;
  const int64_t shard = s * b / t;
  const int64_t attention = 2 * shard * h     // QKV projection input (the sequence shard)
                            + 2 * s * b * q   // Q
                            + 2 * s * b * kv  // K
                            + 2 * s * b * kv  // V
                            + 2 * s * b * q   // output projection input
                            + 4 * b * 8 * s;  // fp32 log-sum-exp of 8 heads
  const int64_t mlp = 2 * shard * h + 6 * s * b * f / t;
  const int64_t norms = 4 * shard * h;
  EXPECT_EQ(bytes(m, {s, b, h, 32, t}, true, RecomputeMode::kNone, true), attention + mlp + norms);
}

TEST(ActivationMemory, MixtralRoutesTopKCopiesOfEachToken) {
  const ModelDesc m = bundled("mixtral-8x7b");
  const int64_t s = 4096, b = 1, h = 4096, t = 2, f = 14336, experts = 8, k = 2;
  CostOptions o;
  o.seq_length = s;
  o.micro_batch_size = b;
  o.tensor_parallel = t;
  o.sequence_parallel = true;
  o.expert_parallel = 4;
  o.flash_attention = true;
  ASSERT_TRUE(check_cost_options(m, o).ok());
  const int64_t shard = s * b / t, copies = s * b * k;
  const int64_t mlp = 2 * shard * h          // router input (norm output)
                      + 4 * shard * experts  // fp32 router probabilities
                      + 8 * shard * k        // int64 expert indices
                      + 2 * copies * h       // expert inputs
                      + 6 * copies * f / t   // fused SwiGLU input and down projection input
                      + 2 * copies * h;      // expert outputs for the weighted combine
  EXPECT_EQ(layer_activation_bytes(m, 0, o).mlp_bytes, mlp);
}

TEST(ActivationMemory, DenseLayersOfAMixedMoeModelUseTheDenseMlp) {
  ModelDesc m = gpt_like(1024, 8);
  m.moe = {4, 1, 2048, 0, 0, 2};  // experts on even layers
  CostOptions o;
  o.seq_length = 256;
  const int64_t sbh = int64_t{256} * 1024;
  EXPECT_EQ(layer_activation_bytes(m, 1, o).mlp_bytes, 19 * sbh);
  EXPECT_NE(layer_activation_bytes(m, 0, o).mlp_bytes, 19 * sbh);
}

TEST(ActivationMemory, FirstStageKeepsTheEmbeddingDropoutMask) {
  const ModelDesc m = gpt_like(4096, 32);
  CostOptions o;
  o.seq_length = 2048;
  o.micro_batch_size = 2;
  o.tensor_parallel = 4;
  o.sequence_parallel = true;
  EXPECT_EQ(embedding_activation_bytes(m, o), int64_t{2048} * 2 * 4096 / 4);  // sbh/t (section 4.3)
  ModelDesc no_dropout = m;
  no_dropout.hidden_dropout = 0;
  EXPECT_EQ(embedding_activation_bytes(no_dropout, o), 0);
}

TEST(ActivationMemory, LastStageKeepsNormInputsAndFp32Logits) {
  const ModelDesc m = bundled("gpt3-175b");
  const int64_t s = 2048, b = 1, h = 12288, t = 8;
  const int64_t v = 51200;  // 50257 padded to a multiple of 128·8
  CostOptions o;
  o.seq_length = s;
  o.micro_batch_size = b;
  o.tensor_parallel = t;
  o.sequence_parallel = true;
  // Section 4.3: 4sbh/t for the final norm and the projection input, 4sbv/t for fp32 logits;
  // plus the cross entropy's 1-byte target mask and int64 targets per token.
  EXPECT_EQ(output_activation_bytes(m, o), 4 * s * b * h / t + 4 * s * b * v / t + 9 * s * b);
}

TEST(ActivationMemory, TheLossCastsTheLogitsBesideTheirFp32Copy) {
  // llama2-7b, s 4096, b 2, t 2: the bf16 logits (or their gradient) beside the fp32 copy, every
  // token's V/t = 16,000 of them, 2 bytes each; sequence parallelism does not split them.
  const ModelDesc m = bundled("llama2-7b");
  CostOptions o;
  o.seq_length = 4096;
  o.micro_batch_size = 2;
  o.tensor_parallel = 2;
  EXPECT_EQ(output_transient_bytes(m, o), 4096 * 2 * 16'000 * 2);
  o.sequence_parallel = true;
  EXPECT_EQ(output_transient_bytes(m, o), 4096 * 2 * 16'000 * 2);
}

// A layer's backward working memory, block by block (activation_memory.h).
TEST(LayerBackwardWork, GroupedQueryFlashAttentionAndSwiGluUnderTensorParallelism) {
  const ModelDesc m = bundled("llama3-8b");  // 32 query and 8 K/V heads of 128, f 14336
  const int64_t s = 8192, b = 1, t = 4, f = 14336;
  const int64_t q = int64_t{8} * 128;  // 8 query heads on each of the 4 ranks
  CostOptions o;
  o.seq_length = s;
  o.micro_batch_size = b;
  o.tensor_parallel = t;
  o.sequence_parallel = true;
  o.flash_attention = true;
  ASSERT_TRUE(check_cost_options(m, o).ok());
  const LayerBackwardWork w = layer_backward_work_bytes(m, 0, o);
  // dO, dQ (bf16), dK and dV expanded to the 8 query heads (bf16), the fp32 dQ accumulator, and
  // the fp32 row sums of 8 heads.
  EXPECT_EQ(w.attention_bytes,
            2 * s * b * q + 2 * s * b * q + 2 * 2 * s * b * q + 4 * s * b * q + 4 * b * 8 * s);
  // The incoming f/t-wide gradient and the 2f/t-wide one the SwiGLU backward writes, bf16; the
  // MLP's tokens are the whole sequence (sequence parallelism gathers it before the up projection).
  EXPECT_EQ(w.mlp_bytes, 2 * s * b * (f / t) + 2 * s * b * (2 * f / t));
  EXPECT_EQ(w.peak_bytes(), std::max(w.attention_bytes, w.mlp_bytes));
}

TEST(LayerBackwardWork, UnfusedAttentionHoldsTwoScoreGradientsAndGeluWritesOneWidth) {
  const Case c = kCases[2];  // s 1024, b 2, h 2048, a 16, t 2
  const ModelDesc m = gpt_like(c.h, c.a);
  CostOptions o;
  o.seq_length = c.s;
  o.micro_batch_size = c.b;
  o.tensor_parallel = c.t;
  ASSERT_TRUE(check_cost_options(m, o).ok());
  const LayerBackwardWork w = layer_backward_work_bytes(m, 0, o);
  const int64_t heads = c.a / c.t, f = 4 * c.h / c.t;
  EXPECT_EQ(w.attention_bytes, 2 * 2 * c.b * heads * c.s * c.s);  // d(softmax), d(scores), bf16
  EXPECT_EQ(w.mlp_bytes, 2 * c.s * c.b * f + 2 * c.s * c.b * f);  // GELU: in and out gradients
}

TEST(LayerBackwardWork, MixtralTakesTheLargerOfItsRoutedCopiesAndItsSharedExperts) {
  const ModelDesc m = bundled("mixtral-8x7b");  // top 2 of 8 experts of f 14336, no shared ones
  CostOptions o;
  o.seq_length = 4096;
  o.micro_batch_size = 1;
  o.tensor_parallel = 2;
  o.sequence_parallel = true;
  o.expert_parallel = 4;
  o.flash_attention = true;
  ASSERT_TRUE(check_cost_options(m, o).ok());
  const int64_t copies = int64_t{4096} * 2, f = 14336 / 2;
  EXPECT_EQ(layer_backward_work_bytes(m, 0, o).mlp_bytes, 2 * copies * f + 2 * copies * 2 * f);
}

}  // namespace
}  // namespace pipescope::models
