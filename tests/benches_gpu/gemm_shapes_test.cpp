#include "gemm_shapes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "pipescope/models/model_catalog.h"

namespace pipescope::benches {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

models::ModelDesc bundled(const char* name) {
  auto model = models::load_bundled_model(name);
  EXPECT_TRUE(model.ok()) << name;
  return *model;
}

ModelShapeOptions one(int64_t tp, int64_t mbs) {
  ModelShapeOptions o;
  o.tensor_parallel = {tp};
  o.micro_batch_sizes = {mbs};
  return o;
}

TEST(ModelGemmShapes, Llama2_7bAtTp1IsForwardAndBothGradientsOfItsFourLinearLayers) {
  // h = 4096, 32 heads of 128 (no GQA), SwiGLU f = 11008; 4096 tokens. QKV: 4096 -> 12288,
  // output projection 4096 -> 4096, up + gate 4096 -> 22016, down 11008 -> 4096. The weight
  // gradients of QKV and of the output projection coincide with their forward shapes.
  EXPECT_THAT(
      model_gemm_shapes(bundled("llama2-7b"), one(1, 1)),
      ElementsAre(GemmShape{4096, 4096, 4096}, GemmShape{4096, 4096, 11008}, GemmShape{4096, 4096, 12288},
                  GemmShape{4096, 4096, 22016}, GemmShape{4096, 11008, 4096}, GemmShape{4096, 12288, 4096},
                  GemmShape{4096, 22016, 4096}, GemmShape{11008, 4096, 4096}));
}

TEST(ModelPassGemmShapes, SplitsTheSameShapesByPass) {
  // llama2-7b at TP 1: the forward of down (11008 -> 4096) is 4096 x 4096 x 11008, its input
  // gradient 4096 x 11008 x 4096, its weight gradient 11008 x 4096 x 4096.
  const PassGemmShapes p = model_pass_gemm_shapes({bundled("llama2-7b")}, one(1, 1));
  EXPECT_THAT(p.forward, ElementsAre(GemmShape{4096, 4096, 4096}, GemmShape{4096, 4096, 11008},
                                     GemmShape{4096, 12288, 4096}, GemmShape{4096, 22016, 4096}));
  EXPECT_THAT(p.input_gradient, ElementsAre(GemmShape{4096, 4096, 4096}, GemmShape{4096, 4096, 12288},
                                            GemmShape{4096, 4096, 22016}, GemmShape{4096, 11008, 4096}));
  EXPECT_THAT(p.weight_gradient, ElementsAre(GemmShape{4096, 4096, 4096}, GemmShape{4096, 12288, 4096},
                                             GemmShape{4096, 22016, 4096}, GemmShape{11008, 4096, 4096}));
}

TEST(SuiteLayoutShapes, EveryBackwardGemmInItsOwnLayoutAndTheForwards) {
  const SuiteLayoutShapes suite = suite_layout_shapes();
  ASSERT_TRUE(suite.error.empty()) << suite.error;
  // llama2-7b's down projection at TP 1, and llama3-70b's QKV at TP 8 (8192 -> 1280).
  EXPECT_THAT(suite.shapes, Contains(PassShape{{4096, 11008, 4096}, GemmPass::kInputGradient}));
  EXPECT_THAT(suite.shapes, Contains(PassShape{{4096, 11008, 4096}, GemmPass::kForward}));
  EXPECT_THAT(suite.shapes, Contains(PassShape{{8192, 1280, 4096}, GemmPass::kWeightGradient}));
  EXPECT_THAT(suite.shapes, Contains(PassShape{{8192, 1280, 4096}, GemmPass::kForward}));
  EXPECT_THAT(suite.shapes, Not(Contains(PassShape{{4096, 1280, 8192}, GemmPass::kForward})));
  // Every backward shape has its forward-layout partner, and nothing else is there.
  size_t backward = 0;
  for (const PassShape& p : suite.shapes) {
    if (p.pass == GemmPass::kForward) continue;
    ++backward;
    EXPECT_THAT(suite.shapes, Contains(PassShape{p.shape, GemmPass::kForward}));
  }
  EXPECT_GT(backward, 10u);
  EXPECT_LT(suite.shapes.size(), 2 * backward + 1);
  EXPECT_TRUE(std::adjacent_find(suite.shapes.begin(), suite.shapes.end()) == suite.shapes.end());
}

TEST(SuiteBatchedAttentionGemms, EachScoresAndContextGemmInThreeForms) {
  const std::vector<BatchedGemm> suite = suite_batched_attention_gemms();
  // 3 head dims x 2 sequences x 2 GEMMs: the matrix alone once, and per batch (32, 384) the
  // batched kernel and the one GEMM of all its rows.
  EXPECT_EQ(suite.size(), 3u * 2 * 2 * (1 + 2 * 2));
  // SC'21's 1.7B: 16 sequences of 2048 tokens, 24 heads of 96 at TP 1.
  const GemmShape scores{2048, 2048, 96}, context{2048, 96, 2048};
  EXPECT_THAT(suite, Contains(BatchedGemm{384, scores, GemmPass::kForward, BatchedForm::kBatched}));
  EXPECT_THAT(suite, Contains(BatchedGemm{1, scores, GemmPass::kForward, BatchedForm::kOneMatrix}));
  EXPECT_THAT(suite, Contains(BatchedGemm{
                         1, {int64_t{384} * 2048, 2048, 96}, GemmPass::kForward, BatchedForm::kAllRows}));
  EXPECT_THAT(suite, Contains(BatchedGemm{384, context, GemmPass::kInputGradient, BatchedForm::kBatched}));
  for (const BatchedGemm& g : suite) {
    EXPECT_EQ(g.batch > 1, g.form == BatchedForm::kBatched);
    // The scores in the forward's layout (K stored s x d), the context in the input gradient's.
    EXPECT_EQ(g.pass, g.shape.n == 2048 || g.shape.n == 4096 ? GemmPass::kForward : GemmPass::kInputGradient);
  }
  EXPECT_STREQ(batched_form_name(BatchedForm::kAllRows), "all_rows");
}

TEST(ModelGemmShapes, GroupedQueryAttentionSplitsQueryAndKvHeadsOverTp) {
  // llama3-70b at TP 8, micro-batch 2: 8192 tokens, q 64 x 128 / 8 = 1024, k and v 8 x 128 / 8
  // = 128 each, so QKV is 8192 -> 1280; down is 28672 / 8 = 3584 -> 8192.
  const auto shapes = model_gemm_shapes(bundled("llama3-70b"), one(8, 2));
  EXPECT_THAT(shapes, Contains(GemmShape{8192, 1280, 8192}));  // forward
  EXPECT_THAT(shapes, Contains(GemmShape{8192, 8192, 1280}));  // input gradient
  EXPECT_THAT(shapes, Contains(GemmShape{8192, 1280, 8192}));  // weight gradient (in = tokens here)
  EXPECT_THAT(shapes, Contains(GemmShape{8192, 8192, 3584}));
  EXPECT_THAT(shapes, Contains(GemmShape{3584, 8192, 8192}));
  EXPECT_THAT(shapes, Contains(GemmShape{8192, 7168, 8192}));  // up + gate: 2 x 3584
}

TEST(ModelGemmShapes, MixtureOfExpertsGivesEachExpertItsShareOfTheRoutedTokens) {
  // mixtral-8x7b: 4096 tokens x top-2 over 8 experts = 1024 rows per expert; no dense MLP;
  // the router is 4096 -> 8.
  const auto shapes = model_gemm_shapes(bundled("mixtral-8x7b"), one(1, 1));
  EXPECT_THAT(shapes, Contains(GemmShape{1024, 28672, 4096}));
  EXPECT_THAT(shapes, Contains(GemmShape{1024, 4096, 14336}));
  EXPECT_THAT(shapes, Contains(GemmShape{4096, 8, 4096}));
  EXPECT_THAT(shapes, Not(Contains(GemmShape{4096, 28672, 4096})));
}

TEST(ModelGemmShapes, SkipsATensorParallelDegreeTheHeadsDoNotDivideInto) {
  models::ModelDesc m = bundled("llama2-7b");
  m.num_attention_heads = 12;
  m.num_kv_heads = 12;
  m.head_dim = m.hidden_size / 12;
  EXPECT_TRUE(model_gemm_shapes(m, one(8, 1)).empty());
  EXPECT_FALSE(model_gemm_shapes(m, one(4, 1)).empty());
}

TEST(GridShapes, EveryCombination) {
  const auto shapes = grid_shapes({1, 2});
  EXPECT_EQ(shapes.size(), 8u);
  EXPECT_EQ(shapes.front(), (GemmShape{1, 1, 1}));
  EXPECT_EQ(shapes.back(), (GemmShape{2, 2, 2}));
}

TEST(SuiteGemmShapes, QuickIsTheSmallGridAndTwoModelsAtTp1And8) {
  const SuiteShapes quick = suite_gemm_shapes(true);
  ASSERT_TRUE(quick.error.empty()) << quick.error;
  EXPECT_THAT(quick.shapes, Contains(GemmShape{512, 2048, 8192}));
  EXPECT_THAT(quick.shapes, Not(Contains(GemmShape{256, 256, 256})));
  EXPECT_THAT(quick.shapes, Contains(GemmShape{4096, 22016, 4096}));      // llama2-7b, TP 1
  EXPECT_THAT(quick.shapes, Contains(GemmShape{4096, 1280, 8192}));       // llama3-70b, TP 8
  EXPECT_THAT(quick.shapes, Not(Contains(GemmShape{8192, 1280, 8192})));  // micro-batch 2: not quick
  EXPECT_TRUE(std::is_sorted(quick.shapes.begin(), quick.shapes.end()));
  EXPECT_TRUE(std::adjacent_find(quick.shapes.begin(), quick.shapes.end()) == quick.shapes.end());
}

TEST(SuiteGemmShapes, FullHasTheWholeGridAndEveryBundledModel) {
  const SuiteShapes full = suite_gemm_shapes(false);
  ASSERT_TRUE(full.error.empty()) << full.error;
  EXPECT_GT(full.shapes.size(), 7u * 7u * 7u);
  EXPECT_THAT(full.shapes, Contains(GemmShape{256, 16384, 256}));
  EXPECT_THAT(full.shapes, Contains(GemmShape{16384, 16384, 16384}));
  // llama3-405b at TP 1, micro-batch 4: 16384 tokens, up + gate 16384 -> 2 x 53248.
  EXPECT_THAT(full.shapes, Contains(GemmShape{16384, 106496, 16384}));
  EXPECT_TRUE(std::adjacent_find(full.shapes.begin(), full.shapes.end()) == full.shapes.end());
}

TEST(Fp8Compatible, NeedsEveryDimensionAMultipleOf16) {
  EXPECT_TRUE(fp8_compatible({4096, 1280, 8192}));
  EXPECT_FALSE(fp8_compatible({4096, 8, 4096}));
}

}  // namespace
}  // namespace pipescope::benches
