// What the search enumerates below each level, and how refusals are tallied, counted by hand.
#include <gtest/gtest.h>

#include "search_space.h"
#include "search_test_support.h"

namespace pipescope::planner::search_detail {
namespace {

models::ModelDesc twelve_layers() {
  models::ModelDesc m = planner::test::tiny_model();
  m.num_layers = 12;
  return m;
}

TEST(Divisors, AscendingAndComplete) {
  EXPECT_EQ(divisors(12), (std::vector<int64_t>{1, 2, 3, 4, 6, 12}));
  EXPECT_EQ(divisors(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(divisors(2048).size(), 12u);  // 2^0 .. 2^11
  EXPECT_EQ(divisors(36), (std::vector<int64_t>{1, 2, 3, 4, 6, 9, 12, 18, 36}));
}

TEST(SearchSpace, InterleavedTakesEveryVppWhoseChunksSplitTheLayers) {
  const models::ModelDesc m = twelve_layers();
  const SearchConstraints c;
  const SearchSpace space(m, c);
  // pp 2: 12 % (2 v) == 0 for v = 2, 3, 6.
  const std::vector<ScheduleVariant> two = space.schedules(2);
  ASSERT_EQ(two.size(), 5u);
  EXPECT_EQ(two[0].kind, ScheduleKind::kOneFOneB);
  EXPECT_EQ(two[1].vpp, 2);
  EXPECT_EQ(two[2].vpp, 3);
  EXPECT_EQ(two[3].vpp, 6);
  EXPECT_EQ(two[4].kind, ScheduleKind::kGPipe);
  EXPECT_EQ(space.schedules(5).size(), 2u);  // 12 % 10 != 0: no interleaving
}

TEST(SearchSpace, OneStageIsSearchedOnceAs1F1B) {
  const models::ModelDesc m = twelve_layers();
  const SearchConstraints c;
  const std::vector<ScheduleVariant> one = SearchSpace(m, c).schedules(1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].kind, ScheduleKind::kOneFOneB);
}

TEST(SearchSpace, ShardGroupsArePowersOfTwoBelowDpThatDivideIt) {
  const models::ModelDesc m = twelve_layers();
  SearchConstraints c;
  const SearchSpace space(m, c);
  // dp 8: zero 0, and stages 1..3 over all of DP or groups of 2 and 4.
  EXPECT_EQ(space.zero_variants(8).size(), 1u + 3u * 3u);
  // dp 12: groups of 2 and 4 (8 does not divide 12).
  EXPECT_EQ(space.zero_variants(12).size(), 1u + 3u * 3u);
  // dp 1: nothing to shard over.
  ASSERT_EQ(space.zero_variants(1).size(), 1u);
  EXPECT_EQ(space.zero_variants(1)[0].zero, 0);
  c.shard_groups = false;
  EXPECT_EQ(SearchSpace(m, c).zero_variants(8).size(), 4u);
}

TEST(SearchSpace, AutoRecomputeIsNotSearchedWithInterleaving) {
  const models::ModelDesc m = twelve_layers();
  const SearchConstraints c;
  const SearchSpace space(m, c);
  EXPECT_EQ(space.recompute(ScheduleKind::kOneFOneB).size(), 4u);
  EXPECT_EQ(space.recompute(ScheduleKind::kInterleaved).size(), 3u);
}

TEST(SearchSpace, CountsBelowALevelMultiplyTheLevelsUnderIt) {
  const models::ModelDesc m = twelve_layers();
  const SearchConstraints c;
  const SearchSpace space(m, c);
  // pp 2, dp 8, per micro-batch: 1F1B and GPipe with 4 recompute choices, three interleaved
  // variants with 3, each times 10 ZeRO variants.
  EXPECT_EQ(space.configs_below_micro_batch(2, 8), (4 + 3 * 3 + 4) * 10);
  EXPECT_EQ(space.configs_below_pp(2, 8), 4 * (4 + 3 * 3 + 4) * 10);
  // tp 8 on 16 GPUs: pp 1 (dp 2: 1 + 3 ZeRO variants, one schedule) and pp 2 (dp 1: one ZeRO
  // variant; 1F1B, GPipe and interleaved vpp 2, 3, 6).
  EXPECT_EQ(space.configs_below_tp(8, 16), 4 * (4 * 4) + 4 * (4 + 3 * 3 + 4));
}

TEST(RejectionTally, MostConfigurationsFirstAndMemoryGroupedByLayout) {
  RejectionTally tally;
  tally.add("tp 16 exceeds the 8 GPUs of a node", 5);
  tally.add("--pp 128 is more pipeline stages than the model's 80 layers", 2);
  tally.add("tp 16 exceeds the 8 GPUs of a node", 5);
  constexpr int64_t kGiB = 1024LL * 1024 * 1024;
  tally.add_out_of_memory(1, 2, false, 90 * kGiB, 76 * kGiB, {4, 0, RecomputeChoice::kNone});
  tally.add_out_of_memory(1, 2, false, 80 * kGiB, 76 * kGiB, {2, 0, RecomputeChoice::kNone});
  tally.add_out_of_memory(1, 2, false, 85 * kGiB, 76 * kGiB, {4, 1, RecomputeChoice::kSelective});
  EXPECT_EQ(tally.total(), 15);
  const std::vector<Rejection> sorted = tally.sorted();
  ASSERT_EQ(sorted.size(), 3u);
  EXPECT_EQ(sorted[0].configs, 10);
  EXPECT_EQ(sorted[1].configs, 3);
  // The reason names the variants refused, not the whole layout: others of tp 1 x pp 2 may fit.
  EXPECT_EQ(
      sorted[1].reason,
      "tp 1, pp 2 with mbs 2, 4, zero 0, 1, recompute none, selective: out of memory on every split; the "
      "leanest uniform split needs 80.00 GiB of 76.00 GiB usable");
  EXPECT_EQ(sorted[2].configs, 2);
}

}  // namespace
}  // namespace pipescope::planner::search_detail
