// The split forms frameworks take, with answers worked out by hand from Megatron-LM's rules:
// layout strings (E, t*k, L, '|'), first/last-stage counts (each >= 1, middle stages even).
#include "pipescope/planner/stage_split.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

namespace pipescope::planner {
namespace {

TEST(MegatronLayout, PutsEmbeddingFirstLossLastAndCountsLayers) {
  EXPECT_EQ(megatron_layout({4, 5, 5, 2}), "Et*4|t*5|t*5|t*2L");
  EXPECT_EQ(megatron_layout({32}), "Et*32L");
}

TEST(MegatronLayout, WritesOneLayerAsTAndAnEmptyStageAsNothing) {
  EXPECT_EQ(megatron_layout({0, 3, 1}), "E|t*3|tL");
}

TEST(MegatronFirstLast, EvenSplitNeedsNoFlag) {
  auto split = megatron_first_last({4, 4, 4, 4});
  ASSERT_TRUE(split);
  EXPECT_TRUE(split->exact);
  EXPECT_FALSE(split->first);
  EXPECT_FALSE(split->last);
}

TEST(MegatronFirstLast, LighterFirstStageIsOneFlag) {
  auto split = megatron_first_last({3, 5, 5, 5});  // 18 - 3 = 15 over 3 stages: 5 each
  ASSERT_TRUE(split);
  EXPECT_TRUE(split->exact);
  EXPECT_EQ(split->first, 3);
  EXPECT_FALSE(split->last);
}

TEST(MegatronFirstLast, BothEndsDifferentAreTwoFlags) {
  auto split = megatron_first_last({2, 5, 5, 4});
  ASSERT_TRUE(split);
  EXPECT_TRUE(split->exact);
  EXPECT_EQ(split->first, 2);
  EXPECT_EQ(split->last, 4);
  EXPECT_EQ(split->layers, (std::vector<int>{2, 5, 5, 4}));
}

TEST(MegatronFirstLast, TwoStagesNeedOnlyTheFirstCount) {
  auto split = megatron_first_last({6, 10});
  ASSERT_TRUE(split);
  EXPECT_TRUE(split->exact);
  EXPECT_EQ(split->first, 6);
  EXPECT_FALSE(split->last);
}

TEST(MegatronFirstLast, UnevenMiddleStagesGiveTheClosestExpressibleSplit) {
  const std::vector<int> wanted = {3, 4, 5, 4};  // middle 4 != 5: no first/last pair gives it
  auto split = megatron_first_last(wanted);
  ASSERT_TRUE(split);
  EXPECT_FALSE(split->exact);
  ASSERT_EQ(split->layers.size(), 4u);
  EXPECT_EQ(split->layers[1], split->layers[2]);
  EXPECT_EQ(std::accumulate(split->layers.begin(), split->layers.end(), 0), 16);
  // One layer off per stage at most (e.g. 3, 5, 5, 3), keeping the first stage's 3.
  for (size_t s = 0; s < 4; ++s) EXPECT_LE(std::abs(split->layers[s] - wanted[s]), 1) << s;
  EXPECT_EQ(split->layers[0], 3);
}

TEST(MegatronFirstLast, StageWithoutLayersIsNotExpressible) {
  auto split = megatron_first_last({0, 8, 8});  // the first count must be at least 1
  ASSERT_TRUE(split);
  EXPECT_FALSE(split->exact);
}

TEST(MegatronFirstLast, FewerLayersThanStagesHasNoSplit) {
  EXPECT_FALSE(megatron_first_last({0, 1}).has_value());
  EXPECT_FALSE(megatron_first_last({1, 0, 0}).has_value());
}

TEST(CommonRecompute, SharedModeIsExact) {
  const CommonRecompute r = common_recompute({"selective", "selective"});
  EXPECT_EQ(r.mode, "selective");
  EXPECT_TRUE(r.exact);
}

TEST(CommonRecompute, MixedModesTakeTheStrongest) {
  const CommonRecompute r = common_recompute({"none", "full", "selective"});
  EXPECT_EQ(r.mode, "full");
  EXPECT_FALSE(r.exact);
}

TEST(DescribeRecompute, GroupsRunsOfStages) {
  EXPECT_EQ(describe_recompute({"full", "full", "none", "none", "none"}), "stages 0-1 full, stages 2-4 none");
  EXPECT_EQ(describe_recompute({"selective"}), "stage 0 selective");
}

// Megatron-LM's offsets with virtual stages (transformer_layer.py): round v holds, in model order,
// first / vpp, then middle / vpp on each middle stage, then last / vpp.
TEST(MegatronFirstLastInterleaved, EveryRoundAlikeIsTheStageCountsTimesTheRounds) {
  // pp 4, vpp 2: rounds {1, 2, 2, 3} twice; per stage 2, 4, 4, 6.
  auto split = megatron_first_last_interleaved({1, 2, 2, 3, 1, 2, 2, 3}, 4, 2);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->first, 2);
  EXPECT_EQ(split->last, 6);
  EXPECT_EQ(split->layers, (std::vector<int>{2, 4, 4, 6}));
  // Only the last stage differs: one flag.
  split = megatron_first_last_interleaved({2, 2, 2, 1, 2, 2, 2, 1}, 4, 2);
  ASSERT_TRUE(split.has_value());
  EXPECT_FALSE(split->first.has_value());
  EXPECT_EQ(split->last, 2);
}

TEST(MegatronFirstLastInterleaved, WhatTheFlagsCannotSayIsNotSaid) {
  EXPECT_FALSE(megatron_first_last_interleaved({1, 2, 2, 3, 2, 2, 2, 2}, 4, 2));  // rounds differ
  EXPECT_FALSE(megatron_first_last_interleaved({1, 2, 3, 3, 1, 2, 3, 3}, 4, 2));  // middle stages differ
  EXPECT_FALSE(megatron_first_last_interleaved({0, 2, 2, 3, 0, 2, 2, 3}, 4, 2));  // an empty first stage
  EXPECT_FALSE(megatron_first_last_interleaved({1, 2, 2}, 4, 2));                 // not pp x vpp chunks
}

}  // namespace
}  // namespace pipescope::planner
