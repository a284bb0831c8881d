#include "collective_plan.h"

#include <gtest/gtest.h>

namespace pipescope::benches {
namespace {

constexpr int kBf16 = 2;
constexpr int64_t kMiB = 1 << 20;

TEST(PlanCollective, AllGatherSizeIsTheOutputAndTheCountIsPerRank) {
  const auto p = plan_collective(Collective::kAllGather, kMiB, 8, kBf16);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->count, 65536);  // 1 MiB / 8 ranks / 2 bytes
  EXPECT_EQ(p->bytes, kMiB);
  EXPECT_EQ(p->send_bytes, kMiB / 8);
  EXPECT_EQ(p->recv_bytes, kMiB);
}

TEST(PlanCollective, ReduceScatterSizeIsTheInput) {
  const auto p = plan_collective(Collective::kReduceScatter, kMiB, 8, kBf16);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->count, 65536);
  EXPECT_EQ(p->send_bytes, kMiB);
  EXPECT_EQ(p->recv_bytes, kMiB / 8);
}

TEST(PlanCollective, AllToAllSendsAChunkToEveryPeer) {
  const auto p = plan_collective(Collective::kAllToAll, kMiB, 4, kBf16);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->count, kMiB / 4 / 2);
  EXPECT_EQ(p->send_bytes, kMiB);
  EXPECT_EQ(p->recv_bytes, kMiB);
}

TEST(PlanCollective, RoundsDownToWholeElementsPerRankAndDropsEmptyOnes) {
  EXPECT_FALSE(plan_collective(Collective::kAllGather, 8, 8, kBf16).has_value());
  EXPECT_EQ(plan_collective(Collective::kAllReduce, 8, 8, kBf16)->count, 4);
  EXPECT_EQ(plan_collective(Collective::kAllGather, 16, 3, kBf16)->bytes, 12);  // 2 elements x 3 ranks
}

TEST(BusBandwidthFactor, NcclTestsDefinitions) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kBroadcast, 8), 1);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kSendRecv, 8), 1);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 1), 0);
}

TEST(CollectiveSizes, EightBytesToOneGibDoubling) {
  const auto sizes = collective_sizes(false);
  ASSERT_EQ(sizes.size(), 28u);  // 2^3 .. 2^30
  EXPECT_EQ(sizes.front(), 8);
  EXPECT_EQ(sizes.back(), int64_t{1} << 30);
}

TEST(CollectiveSizes, QuickStepsBy16AndEndsAt256MiB) {
  EXPECT_EQ(collective_sizes(true),
            (std::vector<int64_t>{8, 128, 2048, 32768, 524288, 8388608, 134217728, 268435456}));
}

TEST(OperationsPerIteration, AboutSixtyFourMiBBetweenOneAndAHundred) {
  EXPECT_EQ(operations_per_iteration(8), 100);
  EXPECT_EQ(operations_per_iteration(kMiB), 64);
  EXPECT_EQ(operations_per_iteration(int64_t{1} << 30), 1);
}

TEST(CollectiveName, AsTheContractSpellsIt) {
  EXPECT_EQ(collective_name(Collective::kAllReduce), "all_reduce");
  EXPECT_EQ(collective_name(Collective::kSendRecv), "send_recv");
  EXPECT_EQ(collective_name(Collective::kAllToAll), "all_to_all");
}

}  // namespace
}  // namespace pipescope::benches
