// Parameter counts of the bundled models against their published sizes, and per-rank shares.
#include <gtest/gtest.h>

#include <cstdint>

#include "bundled_model.h"
#include "pipescope/models/parameter_count.h"

namespace pipescope::models {
namespace {

void expect_within_one_percent(double counted, double published) {
  EXPECT_NEAR(counted / published, 1.0, 0.01) << "counted " << counted << ", published " << published;
}

TEST(ParameterCount, Llama2_7bIsExactlyTheCheckpointSize) {
  // Layer: attention 4·4096² = 67,108,864; SwiGLU 3·4096·11008 = 135,266,304; norms 8,192
  // -> 202,383,360 x 32 = 6,476,267,520; embedding and LM head 2·32000·4096 = 262,144,000;
  // final norm 4,096.
  const ModelDesc m = bundled("llama2-7b");
  EXPECT_EQ(layer_parameters(m, 0).total(), 202'383'360);
  EXPECT_EQ(model_parameters(m).total(), 6'738'415'616);
}

TEST(ParameterCount, MixtralTotalAndActive) {
  // Attention 2·4096² + 2·4096·1024 = 41,943,040; one expert 3·4096·14336 = 176,160,768;
  // router 4096·8; norms 8192. Total: 32·(41,943,040 + 8·176,160,768 + 32,768 + 8,192)
  // + 2·32000·4096 + 4096 = 46,702,792,704. Active: 2 experts instead of 8: 12,879,925,248.
  const ModelDesc m = bundled("mixtral-8x7b");
  EXPECT_EQ(model_parameters(m).total(), 46'702'792'704);
  EXPECT_EQ(active_parameters(m), 12'879'925'248);
  expect_within_one_percent(static_cast<double>(model_parameters(m).total()), 46.7e9);
  expect_within_one_percent(static_cast<double>(active_parameters(m)), 12.9e9);
}

TEST(ParameterCount, Gpt3LayerIs12HSquaredPlus13H) {
  const ModelDesc m = bundled("gpt3-175b");
  const int64_t h = 12288;
  EXPECT_EQ(layer_parameters(m, 0).total(), 12 * h * h + 13 * h);  // Narayanan et al. 2021
  // 96 layers + word embedding 50257·h + learned positions 2048·h + final LayerNorm 2h; tied.
  EXPECT_EQ(model_parameters(m).total(), 96 * (12 * h * h + 13 * h) + 50257 * h + 2048 * h + 2 * h);
  EXPECT_EQ(model_parameters(m).lm_head, 0);
}

TEST(ParameterCount, BundledModelsMatchPublishedSizes) {
  const struct {
    const char* name;
    double published;
  } kPublished[] = {
      {"llama2-7b", 6.74e9},      {"llama2-13b", 13.0e9},   {"llama2-70b", 68.98e9},
      {"llama3-8b", 8.03e9},      {"llama3-70b", 70.6e9},   {"llama3-405b", 405.9e9},
      {"internlm-123b", 123.2e9}, {"mixtral-8x7b", 46.7e9}, {"gpt3-175b", 175e9},
  };
  for (const auto& p : kPublished) {
    SCOPED_TRACE(p.name);
    expect_within_one_percent(static_cast<double>(model_parameters(bundled(p.name)).total()), p.published);
  }
}

TEST(ParameterCount, Llama3_405bByHand) {
  // Attention 2·16384² + 2·16384·1024 = 570,425,344; SwiGLU 3·16384·53248 = 2,617,245,696;
  // norms 32,768 -> 3,187,703,808 x 126 = 401,650,679,808; embeddings 2·128256·16384 =
  // 4,202,692,608; final norm 16,384.
  EXPECT_EQ(model_parameters(bundled("llama3-405b")).total(), 405'853'388'800);
}

TEST(ParameterCount, InternLm2ByHand) {
  // The names say 7B and 20B. 7b: the layer of llama3-8b (218,112,000) x 32 + 2·92544·4096 +
  // 4096. 20b: attention 2·6144² + 2·6144·1024 = 88,080,384, SwiGLU 3·6144·16384 = 301,989,888,
  // norms 12,288 -> 390,082,560 x 48 + 2·92544·6144 + 6144.
  EXPECT_EQ(model_parameters(bundled("internlm2-7b")).total(), 7'737'708'544);
  EXPECT_EQ(model_parameters(bundled("internlm2-20b")).total(), 19'861'149'696);
}

TEST(ParameterCount, TensorParallelSplitsMatricesAndReplicatesNorms) {
  const ModelDesc m = bundled("llama2-7b");
  CostOptions o;
  o.tensor_parallel = 8;
  const int64_t h = 4096, f = 11008;
  const LayerParameters p = layer_parameters_per_rank(m, 0, o);
  EXPECT_EQ(p.attention, 4 * h * h / 8);
  EXPECT_EQ(p.dense_mlp, 3 * h * f / 8);
  EXPECT_EQ(p.norms, 2 * h);
  // 32000 padded to a multiple of 128·8 = 32768: 4096 rows per rank.
  const ModelParameters whole = model_parameters_per_rank(m, o);
  EXPECT_EQ(whole.embedding, 4096 * h);
  EXPECT_EQ(whole.lm_head, 4096 * h);
  EXPECT_EQ(whole.final_norm, h);
}

TEST(ParameterCount, ColumnParallelBiasesSplitRowParallelBiasesReplicate) {
  const ModelDesc m = bundled("gpt3-175b");
  CostOptions o;
  o.tensor_parallel = 8;
  const int64_t h = 12288;
  const LayerParameters p = layer_parameters_per_rank(m, 0, o);
  EXPECT_EQ(p.attention, 4 * h * h / 8 + 3 * h / 8 + h);  // QKV bias split, output bias whole
  EXPECT_EQ(p.dense_mlp, 8 * h * h / 8 + 4 * h / 8 + h);  // fc1 bias split, fc2 bias whole
  EXPECT_EQ(p.norms, 4 * h);                              // two LayerNorms, weight and bias
  // Learned positions are replicated; words are split over the padded vocabulary 51200.
  EXPECT_EQ(model_parameters_per_rank(m, o).embedding, 51200 / 8 * h + 2048 * h);
}

TEST(ParameterCount, ExpertParallelSpreadsRoutedExperts) {
  const ModelDesc m = bundled("mixtral-8x7b");
  CostOptions o;
  o.expert_parallel = 8;
  o.tensor_parallel = 2;
  const LayerParameters p = layer_parameters_per_rank(m, 0, o);
  EXPECT_EQ(p.routed_experts, int64_t{3} * 4096 * 14336 / 2);  // one expert, half of it
  EXPECT_EQ(p.router, int64_t{4096} * 8);                      // replicated
  EXPECT_EQ(p.dense_mlp, 0);
}

TEST(ParameterCount, MoeLayerFrequencyAndSharedExperts) {
  ModelDesc m = bundled("llama2-7b");
  m.moe = {4, 1, 2048, 1, 1024, 2};  // experts on layers 0, 2, 4, ...; one shared expert
  const int64_t h = 4096;
  EXPECT_EQ(layer_parameters(m, 1).dense_mlp, 3 * h * 11008);
  const LayerParameters moe = layer_parameters(m, 2);
  EXPECT_EQ(moe.dense_mlp, 0);
  EXPECT_EQ(moe.routed_experts, h * 2048 * 3 * 4);  // four experts of three matrices
  EXPECT_EQ(moe.shared_experts, 3 * h * 1024);
  EXPECT_EQ(moe.router, 4 * h);
  // Active: per MoE layer three of the four routed experts are skipped; 16 MoE layers.
  EXPECT_EQ(active_parameters(m), model_parameters(m).total() - h * 2048 * 3 * 3 * 16);
}

}  // namespace
}  // namespace pipescope::models
