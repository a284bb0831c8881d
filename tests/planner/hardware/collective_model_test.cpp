// The collective model: nccl-tests' bus-bandwidth factors, times worked out by hand, and times
// that grow with the message size for every shipped profile, kind and tier.
#include <gtest/gtest.h>

#include <string>

#include "pipescope/planner/calibration_profile.h"

namespace pipescope::planner {
namespace {

TEST(BusBandwidthFactor, FollowsNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllGather, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kReduceScatter, 2), 1.0 / 2);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllToAll, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kSendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 1), 0.0);
}

TEST(CollectiveKindNames, RoundTrip) {
  for (CollectiveKind kind : kCollectiveKinds)
    EXPECT_EQ(parse_collective_kind(collective_kind_name(kind)), kind);
  EXPECT_FALSE(parse_collective_kind("broadcast").has_value());
}

CalibrationProfile round_numbers() {
  CalibrationProfile p;
  for (LinkTier tier : kLinkTiers) {
    for (CollectiveKind kind : kCollectiveKinds) {
      p.collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)] = {1e-5, 0, 0.5, "s"};
    }
  }
  p.collectives[static_cast<size_t>(LinkTier::kInterNode)][static_cast<size_t>(CollectiveKind::kSendRecv)] = {
      2e-5, 10e9, 0, "s"};
  return p;
}

TEST(CollectiveTime, IsLatencyPlusBusBytesOverBusBandwidth) {
  const CalibrationProfile p = round_numbers();
  // 8 ranks all-reduce 1.5 GB over a 300 GB/s link at half efficiency: 1e-5 + 1.5e9 * 1.75 / 150e9.
  EXPECT_NEAR(p.collective_time_s(CollectiveKind::kAllReduce, 1.5e9, 8, LinkTier::kIntraNode, 300e9),
              1e-5 + 0.0175, 1e-12);
  // 4 ranks all-gather 1 GB of output: each rank moves 3/4 of it.
  EXPECT_NEAR(p.collective_time_s(CollectiveKind::kAllGather, 1e9, 4, LinkTier::kIntraNode, 300e9),
              1e-5 + 0.75e9 / 150e9, 1e-12);
  // The absolute form ignores the link: 1 GB at 10 GB/s.
  EXPECT_NEAR(p.collective_time_s(CollectiveKind::kSendRecv, 1e9, 2, LinkTier::kInterNode, 1e12), 2e-5 + 0.1,
              1e-12);
}

TEST(CollectiveTime, TakesTheLinkFromTheCluster) {
  const CalibrationProfile p = round_numbers();
  auto kalos = load_cluster("kalos");
  ASSERT_TRUE(kalos.ok()) << kalos.error().message;
  // Kalos: 5 x 200 Gb/s = 125 GB/s per node, half of it as busbw; 16 ranks reduce-scatter 1 GB.
  EXPECT_NEAR(p.collective_time_s(CollectiveKind::kReduceScatter, 1e9, 16, LinkTier::kInterNode, *kalos),
              1e-5 + 1e9 * 15.0 / 16 / 62.5e9, 1e-12);
  // Inside a node the A100's 300 GB/s NVLink (one direction) is the link.
  EXPECT_NEAR(p.collective_time_s(CollectiveKind::kAllReduce, 1e9, 8, LinkTier::kIntraNode, *kalos),
              1e-5 + 1e9 * 1.75 / 150e9, 1e-12);
}

TEST(CollectiveTime, IsZeroWithoutAPeerOrData) {
  const CalibrationProfile p = round_numbers();
  EXPECT_EQ(p.collective_time_s(CollectiveKind::kAllReduce, 1e9, 1, LinkTier::kIntraNode, 300e9), 0);
  EXPECT_EQ(p.collective_time_s(CollectiveKind::kAllReduce, 0, 8, LinkTier::kIntraNode, 300e9), 0);
}

TEST(CollectiveTime, GrowsWithBytesForEveryShippedProfileKindAndTier) {
  for (const std::string& name : known_profile_names()) {
    auto profile = load_calibration_profile(name);
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    for (const std::string& cluster_name : known_cluster_names()) {
      auto cluster = load_cluster(cluster_name);
      ASSERT_TRUE(cluster.ok()) << cluster.error().message;
      for (LinkTier tier : kLinkTiers) {
        for (CollectiveKind kind : kCollectiveKinds) {
          double previous = 0;
          for (double bytes = 1e3; bytes <= 1e11; bytes *= 10) {
            const double t = profile->collective_time_s(kind, bytes, 8, tier, *cluster);
            EXPECT_GT(t, previous) << name << " " << cluster_name << " " << link_tier_name(tier) << " "
                                   << collective_kind_name(kind) << " at " << bytes << " bytes";
            previous = t;
          }
        }
      }
    }
  }
}

TEST(CollectiveTime, InterNodeIsSlowerThanNvlinkOnThePapersClusters) {
  auto profile = load_calibration_profile("a100-80gb");
  ASSERT_TRUE(profile.ok());
  for (const char* name : {"seren", "kalos"}) {
    auto cluster = load_cluster(name);
    ASSERT_TRUE(cluster.ok());
    EXPECT_GT(profile->collective_time_s(CollectiveKind::kAllReduce, 1e9, 8, LinkTier::kInterNode, *cluster),
              profile->collective_time_s(CollectiveKind::kAllReduce, 1e9, 8, LinkTier::kIntraNode, *cluster))
        << name;
  }
}

}  // namespace
}  // namespace pipescope::planner
