// NCCL's tuning model (nccl_tuning.h) against latencies and times worked out by hand from NCCL
// 2.30.7's constants (src/graph/tuning.cc), in microseconds.
#include "pipescope/planner/nccl_tuning.h"

#include <gtest/gtest.h>

namespace pipescope::planner {
namespace {

constexpr double kUs = 1e-6;

TEST(NcclTuning, AppliesToRingAndTreeCollectivesAcrossNodesOnly) {
  EXPECT_TRUE(nccl_tuning_applies(CollectiveKind::kAllReduce, {16, 2}));
  EXPECT_TRUE(nccl_tuning_applies(CollectiveKind::kAllGather, {1024, 128}));
  EXPECT_TRUE(nccl_tuning_applies(CollectiveKind::kReduceScatter, {16, 16}));
  EXPECT_FALSE(nccl_tuning_applies(CollectiveKind::kAllReduce, {8, 1}));   // one node: NVLink only
  EXPECT_FALSE(nccl_tuning_applies(CollectiveKind::kAllToAll, {16, 2}));   // not a ring or a tree
  EXPECT_FALSE(nccl_tuning_applies(CollectiveKind::kSendRecv, {2, 2}));    // point to point
  EXPECT_FALSE(nccl_tuning_applies(CollectiveKind::kAllReduce, {12, 8}));  // not spread evenly
}

// A ring all-gather over 1,024 ranks on 128 nodes: 1,023 steps, 127 of them across the network.
// LL: 6.6 + 896 x max(0.6, 1.0 net overhead) + 127 x 2.7; LL128: 6.6... x 1.9 / 4.0 + 14.0 base;
// Simple: 8.4 + 896 x max(3.4, 3.0) + 127 x 14.0. The least is LL's.
TEST(NcclTuning, ARingsLatencyGrowsWithItsSteps) {
  const NcclGroupShape shape{1024, 128};
  EXPECT_NEAR(nccl_least_latency_s(CollectiveKind::kAllGather, shape), (6.6 + 896 * 1.0 + 127 * 2.7) * kUs,
              1e-12);
  const NcclChoice tiny = nccl_fastest_choice(CollectiveKind::kAllGather, 1, shape, 40e9, 0);
  EXPECT_EQ(tiny.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(tiny.protocol, NcclProtocol::kLL);
  EXPECT_NEAR(tiny.latency_s, (6.6 + 896 * 1.0 + 127 * 2.7) * kUs, 1e-12);
  // Eight times the ranks on as many more nodes: about eight times the latency.
  EXPECT_GT(nccl_least_latency_s(CollectiveKind::kAllGather, shape),
            7 * nccl_least_latency_s(CollectiveKind::kAllGather, {128, 16}));
}

// A small all-reduce on 4 nodes of 8 is the tree's: 6.8 + 2 x (7 x 0.6 + log2(4) x 5.0) against
// the ring's 6.6 + 56 x 1.0 + 6 x 2.7 with LL.
TEST(NcclTuning, SmallAllReducesTakeTheTree) {
  const NcclGroupShape shape{32, 4};
  EXPECT_NEAR(nccl_least_latency_s(CollectiveKind::kAllReduce, shape), (6.8 + 2 * (7 * 0.6 + 2 * 5.0)) * kUs,
              1e-12);
  const NcclChoice c = nccl_fastest_choice(CollectiveKind::kAllReduce, 4096, shape, 40e9, 0);
  EXPECT_EQ(c.algorithm, NcclAlgorithm::kTree);
  EXPECT_EQ(c.protocol, NcclProtocol::kLL);
}

// A 1 GB all-reduce on 8 nodes of 8: the ring with Simple, at the profile's bus bandwidth
// (nccl-tests' 2(n - 1)/n), after 8.4 + 112 x 3.4 + 14 x 14.0 of latency; the tree would move it
// at 0.92 / 2 of the bandwidth.
TEST(NcclTuning, LargeAllReducesTakeTheRingWithSimpleAtTheProfilesBandwidth) {
  const NcclChoice c = nccl_fastest_choice(CollectiveKind::kAllReduce, 1e9, {64, 8}, 40e9, 0);
  EXPECT_EQ(c.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(c.protocol, NcclProtocol::kSimple);
  EXPECT_NEAR(c.latency_s, (8.4 + 112 * 3.4 + 14 * 14.0) * kUs, 1e-12);
  EXPECT_NEAR(c.transfer_s, 1e9 * 2 * 63 / 64 / 40e9, 1e-12);
}

// One GPU per node: every hop crosses the network at NCCL's tree latency for the protocol.
TEST(NcclTuning, OneRankPerNodeCrossesTheNetworkAtEveryStep) {
  EXPECT_NEAR(nccl_least_latency_s(CollectiveKind::kReduceScatter, {16, 16}), (6.6 + 15 * 5.0) * kUs, 1e-12);
}

// LL moves half the bytes of a line, and no more than 20.4 GB/s across more than two nodes.
TEST(NcclTuning, LowLatencyProtocolsPayInBandwidth) {
  const NcclGroupShape shape{1024, 128};
  const double bytes = 14e6;
  const NcclChoice c = nccl_fastest_choice(CollectiveKind::kAllGather, bytes, shape, 50e9, 0);
  EXPECT_EQ(c.protocol, NcclProtocol::kLL);
  EXPECT_NEAR(c.transfer_s, bytes * 1023.0 / 1024.0 / 20.4e9, 1e-12);
}

TEST(NcclTuning, TheOffsetIsAddedToEveryChoice) {
  const NcclChoice plain = nccl_fastest_choice(CollectiveKind::kAllReduce, 1e6, {64, 8}, 40e9, 0);
  const NcclChoice offset = nccl_fastest_choice(CollectiveKind::kAllReduce, 1e6, {64, 8}, 40e9, 50e-6);
  EXPECT_EQ(offset.algorithm, plain.algorithm);
  EXPECT_EQ(offset.protocol, plain.protocol);
  EXPECT_NEAR(offset.latency_s, plain.latency_s + 50e-6, 1e-15);
}

}  // namespace
}  // namespace pipescope::planner
