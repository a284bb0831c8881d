// Placing the members of a communicator that left no trace from how the others are laid out.
#include "pipescope/analysis/untraced_members.h"

#include <gtest/gtest.h>

#include <vector>

namespace pipescope::analysis {
namespace {

using Comms = std::vector<std::vector<int32_t>>;

TEST(UntracedMembers, WorldCommunicatorInGlobalOrderPlacesTheRankByItsNcclRank) {
  Comms comms = {{0, 1, -1, 3}};
  EXPECT_EQ(fill_untraced_members(comms, {{2}}, 4), 1u);
  EXPECT_EQ(comms[0], (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(UntracedMembers, TheEndOfAPipelineChainTakesTheOnlyCandidateAboveTheLastKnownMember) {
  Comms comms = {{3, 7, 11, -1}};
  EXPECT_EQ(fill_untraced_members(comms, {{15}}, 16), 1u);
  EXPECT_EQ(comms[0], (std::vector<int32_t>{3, 7, 11, 15}));
}

TEST(UntracedMembers, AProgressionDecidesWhereTheGapHoldsTwoCandidates) {
  // Ranks 7 and 9 died; 3, 11 and 15 step by 4, so the pipeline's second stage is 7.
  Comms comms = {{3, -1, 11, 15}};
  EXPECT_EQ(fill_untraced_members(comms, {{7, 9}}, 16), 1u);
  EXPECT_EQ(comms[0], (std::vector<int32_t>{3, 7, 11, 15}));
}

TEST(UntracedMembers, AGroupWithOneKnownMemberTakesTheStrideOfItsFamily) {
  // tp 2 x dp 2 x pp 2 in Megatron's order; ranks 0 and 1 (a whole tensor-parallel group) died.
  // Their data-parallel groups {0,2} and {1,3} each kept one member. Stride 1 (tensor parallel)
  // would put rank 1 beside 2, which already has its tensor-parallel group {2,3}: stride 2 it is.
  Comms comms = {{2, 3}, {4, 5}, {6, 7}, {-1, 2}, {-1, 3}, {4, 6}, {5, 7}};
  const std::vector<std::vector<int32_t>> candidates(comms.size(), {0, 1});
  EXPECT_EQ(fill_untraced_members(comms, candidates, 8), 2u);
  EXPECT_EQ(comms[3], (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(comms[4], (std::vector<int32_t>{1, 3}));
}

TEST(UntracedMembers, ARuleFillsEveryGapOrNone) {
  // 0..3 step by one, but rank 2 left a trace elsewhere: it is no candidate, so nothing is filled.
  Comms comms = {{0, -1, -1, 3}};
  EXPECT_EQ(fill_untraced_members(comms, {{1}}, 8), 0u);
  EXPECT_EQ(comms[0], (std::vector<int32_t>{0, -1, -1, 3}));
}

TEST(UntracedMembers, WhatNothingDecidesStaysUnknown) {
  Comms comms = {{-1, 5}};
  EXPECT_EQ(fill_untraced_members(comms, {{1, 3}}, 8), 0u);
  EXPECT_EQ(comms[0], (std::vector<int32_t>{-1, 5}));
  Comms lone = {{-1, 5}};
  EXPECT_EQ(fill_untraced_members(lone, {{3}}, 8), 1u);  // one slot, one candidate
  EXPECT_EQ(lone[0], (std::vector<int32_t>{3, 5}));
}

}  // namespace
}  // namespace pipescope::analysis
