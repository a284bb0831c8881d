// Validation of a description names the field at fault; enum names round-trip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bundled_model.h"
#include "pipescope/models/cost_options.h"
#include "pipescope/models/model_catalog.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models {
namespace {

using ::testing::HasSubstr;

ModelDesc llama2_7b() { return bundled("llama2-7b"); }

std::string invalid(const ModelDesc& m) {
  Status s = validate(m);
  EXPECT_FALSE(s.ok());
  return s.ok() ? std::string() : s.error().message;
}

TEST(ModelDesc, BundledDescriptionIsValid) { EXPECT_TRUE(validate(llama2_7b()).ok()); }

TEST(ModelDesc, NonPositiveSizeIsNamed) {
  ModelDesc m = llama2_7b();
  m.hidden_size = 0;
  EXPECT_THAT(invalid(m), HasSubstr("field 'hidden_size' must be positive, got 0"));
}

TEST(ModelDesc, ImplausibleSizesAreRefusedAsTypos) {
  ModelDesc m = llama2_7b();
  m.num_layers = 2'000'000'000;  // would make the split search run for hours
  EXPECT_THAT(invalid(m), HasSubstr("field 'num_layers' is 2000000000, above the 1024"));
  m = llama2_7b();
  m.num_layers = 1024;  // the largest accepted
  EXPECT_TRUE(validate(m).ok());
  m.vocab_size = int64_t{1} << 30;
  EXPECT_THAT(invalid(m), HasSubstr("field 'vocab_size'"));
}

TEST(ModelDesc, KvHeadsMustDivideHeads) {
  ModelDesc m = llama2_7b();
  m.num_kv_heads = 5;
  EXPECT_THAT(invalid(m), HasSubstr("field 'num_kv_heads' (5) does not divide num_attention_heads (32)"));
}

TEST(ModelDesc, LearnedPositionsNeedAMaximum) {
  ModelDesc m = llama2_7b();
  m.position = PositionKind::kLearned;
  m.max_position_embeddings = 0;
  EXPECT_THAT(invalid(m), HasSubstr("field 'max_position_embeddings'"));
}

TEST(ModelDesc, DropoutIsAProbability) {
  ModelDesc m = llama2_7b();
  m.hidden_dropout = 1.5;
  EXPECT_THAT(invalid(m), HasSubstr("field 'hidden_dropout' must be in [0, 1)"));
}

TEST(ModelDesc, TopKMustNotExceedExperts) {
  ModelDesc m = llama2_7b();
  m.moe = {8, 9, 14336, 0, 0, 1};
  EXPECT_THAT(invalid(m), HasSubstr("field 'moe.top_k' must be between 1 and moe.num_experts (8), got 9"));
}

TEST(ModelDesc, SharedExpertsNeedASize) {
  ModelDesc m = llama2_7b();
  m.moe = {8, 2, 14336, 2, 0, 1};
  EXPECT_THAT(invalid(m), HasSubstr("field 'moe.shared_expert_ffn_hidden_size' must be positive"));
}

TEST(ModelDesc, MoeLayerFrequencyPicksEveryNthLayerFromZero) {
  ModelDesc m = llama2_7b();
  m.moe = {8, 2, 14336, 0, 0, 3};
  EXPECT_TRUE(m.is_moe_layer(0));
  EXPECT_FALSE(m.is_moe_layer(1));
  EXPECT_FALSE(m.is_moe_layer(2));
  EXPECT_TRUE(m.is_moe_layer(3));
  EXPECT_FALSE(llama2_7b().is_moe_layer(0));
}

TEST(ModelDesc, KindNamesRoundTrip) {
  for (MlpKind k : {MlpKind::kGelu, MlpKind::kSwiglu}) EXPECT_EQ(parse_mlp_kind(to_string(k)), k);
  for (NormKind k : {NormKind::kLayerNorm, NormKind::kRmsNorm}) EXPECT_EQ(parse_norm_kind(to_string(k)), k);
  for (PositionKind k : {PositionKind::kRope, PositionKind::kLearned, PositionKind::kAlibi}) {
    EXPECT_EQ(parse_position_kind(to_string(k)), k);
  }
  for (RecomputeMode k : {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull}) {
    EXPECT_EQ(parse_recompute_mode(to_string(k)), k);
  }
  EXPECT_FALSE(parse_recompute_mode("auto").has_value());  // the planner's choice, not a mode
}

TEST(CostOptions, HeadsThatDoNotSplitOverTensorParallelAreNamed) {
  CostOptions o;
  o.tensor_parallel = 3;
  Status s = check_cost_options(llama2_7b(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message,
              HasSubstr("num_attention_heads (32) is not divisible by the tensor parallel size (3)"));
}

TEST(CostOptions, GroupedKvHeadsMustSplitOverTensorParallel) {
  Expected<ModelDesc> m = load_bundled_model("llama3-70b");  // 8 K/V heads
  ASSERT_TRUE(m.ok());
  CostOptions o;
  o.tensor_parallel = 16;
  Status s = check_cost_options(*m, o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("num_kv_heads (8)"));
}

TEST(CostOptions, SequenceParallelNeedsTheSequenceToSplit) {
  CostOptions o;
  o.tensor_parallel = 8;
  o.sequence_parallel = true;
  o.seq_length = 4100;
  Status s = check_cost_options(llama2_7b(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("sequence length (4100)"));
}

TEST(CostOptions, ExpertParallelNeedsExperts) {
  CostOptions o;
  o.expert_parallel = 2;
  EXPECT_FALSE(check_cost_options(llama2_7b(), o).ok());
  Expected<ModelDesc> mixtral = load_bundled_model("mixtral-8x7b");
  ASSERT_TRUE(mixtral.ok());
  EXPECT_TRUE(check_cost_options(*mixtral, o).ok());
  o.expert_parallel = 3;
  Status s = check_cost_options(*mixtral, o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message,
              HasSubstr("moe.num_experts (8) is not divisible by the expert parallel size (3)"));
}

TEST(CostOptions, VocabularyIsPaddedToAMultipleOf128TimesT) {
  Expected<ModelDesc> gpt3 = load_bundled_model("gpt3-175b");
  ASSERT_TRUE(gpt3.ok());
  CostOptions o;
  EXPECT_EQ(padded_vocab_size(*gpt3, o), 50304);  // 393 x 128
  o.tensor_parallel = 8;
  EXPECT_EQ(padded_vocab_size(*gpt3, o), 51200);  // 50 x 1024
  EXPECT_EQ(padded_vocab_size(llama2_7b(), CostOptions{}), 32000);
}

}  // namespace
}  // namespace pipescope::models
