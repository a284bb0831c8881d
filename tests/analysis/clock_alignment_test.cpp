// Clock alignment, specified on synthetic runs whose clock offsets are known by construction:
// ranks on hosts whose clocks disagree by up to seconds, TP / DP / world communicators in
// Megatron order (TP fastest, then DP, then PP), and every collective end observed through
// the rank's clock plus normal jitter and, in some tests, late outliers.
#include "pipescope/analysis/clock_alignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pipescope::analysis {
namespace {

constexpr int64_t kEpochNs = 1'700'000'000'000'000'000;  // realistic CLOCK_REALTIME magnitude
constexpr double kUs = 1e3;
constexpr double kMs = 1e6;

struct RunSpec {
  uint32_t tp = 8;
  uint32_t dp = 8;
  uint32_t pp = 1;
  uint32_t gpus_per_host = 8;
  bool world = true;  // a world communicator joins all stages
  int steps = 40;
  int tp_ops_per_step = 2;  // TP collectives per step, per TP group
  int dp_ops_per_step = 1;
  double jitter_ns = 2 * kUs;   // normal, per end
  double outlier_fraction = 0;  // ends delayed by 0.5 .. 5 ms
  uint64_t seed = 1;
};

struct SyntheticRun {
  uint32_t ranks = 0;
  std::vector<int64_t> clock_ahead_ns;  // rank r's clock reads true time + clock_ahead_ns[r]
  std::vector<CollectiveEnd> ends;
  uint64_t instances = 0;
};

// Megatron order: rank = tp + TP * (dp + DP * pp).
SyntheticRun make_run(const RunSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  SyntheticRun run;
  run.ranks = spec.tp * spec.dp * spec.pp;
  const uint32_t hosts = (run.ranks + spec.gpus_per_host - 1) / spec.gpus_per_host;
  std::uniform_real_distribution<double> host_offset(-2e9, 2e9);  // hosts disagree by seconds
  std::uniform_real_distribution<double> gpu_offset(-50 * kUs, 50 * kUs);
  std::vector<double> host_ahead(hosts);
  for (double& h : host_ahead) h = host_offset(rng);
  for (uint32_t r = 0; r < run.ranks; ++r) {
    run.clock_ahead_ns.push_back(std::llround(host_ahead[r / spec.gpus_per_host] + gpu_offset(rng)));
  }

  struct Group {
    uint64_t comm_id;
    std::vector<uint32_t> members;
    uint64_t sequence = 0;
  };
  auto rank_of = [&](uint32_t t, uint32_t d, uint32_t p) { return t + spec.tp * (d + spec.dp * p); };
  std::vector<Group> tp_groups, dp_groups, world;
  for (uint32_t p = 0; p < spec.pp; ++p) {
    for (uint32_t d = 0; d < spec.dp; ++d) {
      Group g{rng(), {}};
      for (uint32_t t = 0; t < spec.tp; ++t) g.members.push_back(rank_of(t, d, p));
      tp_groups.push_back(g);
    }
    for (uint32_t t = 0; t < spec.tp; ++t) {
      Group g{rng(), {}};
      for (uint32_t d = 0; d < spec.dp; ++d) g.members.push_back(rank_of(t, d, p));
      dp_groups.push_back(g);
    }
  }
  if (spec.world) {
    world.push_back({rng(), {}});
    for (uint32_t r = 0; r < run.ranks; ++r) world[0].members.push_back(r);
  }

  std::normal_distribution<double> jitter(0, spec.jitter_ns);
  std::bernoulli_distribution outlier(spec.outlier_fraction);
  std::uniform_real_distribution<double> delay(0.5 * kMs, 5 * kMs);
  int64_t now_ns = kEpochNs;
  auto emit = [&](Group& g) {
    if (g.members.size() < 2) return;
    now_ns += 1'000'000;
    for (uint32_t r : g.members) {
      double observed = jitter(rng) + (outlier(rng) ? delay(rng) : 0.0);
      run.ends.push_back({r, g.comm_id, g.sequence, now_ns + run.clock_ahead_ns[r] + std::llround(observed)});
    }
    ++g.sequence;
    ++run.instances;
  };
  for (int step = 0; step < spec.steps; ++step) {
    for (int op = 0; op < spec.tp_ops_per_step; ++op) {
      for (Group& g : tp_groups) emit(g);
    }
    for (int op = 0; op < spec.dp_ops_per_step; ++op) {
      for (Group& g : dp_groups) emit(g);
    }
    for (Group& g : world) emit(g);
  }
  std::shuffle(run.ends.begin(), run.ends.end(), rng);  // ranks' files are read in any order
  return run;
}

// |recovered offset - true offset| of every refined rank, relative to the reference.
std::vector<double> offset_errors(const SyntheticRun& run, const ClockAlignment& a) {
  std::vector<double> errors;
  const int64_t reference_ahead = run.clock_ahead_ns[a.reference_rank];
  for (uint32_t r = 0; r < run.ranks; ++r) {
    if (!a.refined[r]) continue;
    const int64_t expected = reference_ahead - run.clock_ahead_ns[r];
    errors.push_back(std::abs(static_cast<double>(a.offset_ns[r] - expected)));
  }
  std::sort(errors.begin(), errors.end());
  return errors;
}

double p99(const std::vector<double>& sorted) {
  return sorted[static_cast<size_t>(0.99 * static_cast<double>(sorted.size() - 1))];
}

TEST(ClockAlignment, RecoversInjectedOffsetsWithinMicroseconds) {
  // 64 ranks on 8 hosts, clocks seconds apart, 2 us jitter: p99 error under 2 us, max under 5 us.
  const SyntheticRun run = make_run({.tp = 8, .dp = 8, .jitter_ns = 2 * kUs, .seed = 7});
  const ClockAlignment a = align_clocks(run.ranks, run.ends);
  EXPECT_EQ(a.reference_rank, 0u);
  EXPECT_EQ(a.offset_ns[0], 0);
  EXPECT_EQ(a.instances_used, run.instances);
  EXPECT_EQ(std::count(a.refined.begin(), a.refined.end(), true), 64);
  const std::vector<double> errors = offset_errors(run, a);
  EXPECT_LT(p99(errors), 2 * kUs);
  EXPECT_LT(errors.back(), 5 * kUs);
  // |x - median| of normal jitter has median ~0.67 sigma: the residual skew reports the jitter.
  EXPECT_GT(a.residual_median_ns, 0.5 * kUs);
  EXPECT_LT(a.residual_median_ns, 2.5 * kUs);
  EXPECT_LT(a.residual_p99_ns, 10 * kUs);
  EXPECT_GE(a.residual_max_ns, a.residual_p99_ns);
}

TEST(ClockAlignment, ExactEndsGiveExactOffsets) {
  const SyntheticRun run =
      make_run({.tp = 4, .dp = 4, .pp = 2, .gpus_per_host = 4, .jitter_ns = 0, .seed = 3});
  const ClockAlignment a = align_clocks(run.ranks, run.ends);
  EXPECT_EQ(offset_errors(run, a).back(), 0);
  EXPECT_EQ(a.residual_max_ns, 0);
}

TEST(ClockAlignment, LateOutliersDoNotSpoilTheFit) {
  // One end in ten finishes 0.5 to 5 ms late: the offsets stay within microseconds, and the
  // residuals show the outliers rather than hide them.
  const SyntheticRun run =
      make_run({.tp = 8, .dp = 8, .jitter_ns = 2 * kUs, .outlier_fraction = 0.10, .seed = 11});
  const ClockAlignment a = align_clocks(run.ranks, run.ends);
  const std::vector<double> errors = offset_errors(run, a);
  EXPECT_LT(p99(errors), 3 * kUs);
  EXPECT_LT(errors.back(), 5 * kUs);
  EXPECT_LT(a.residual_median_ns, 3 * kUs);
  EXPECT_GT(a.residual_p99_ns, 0.4 * kMs);
  EXPECT_GT(a.residual_max_ns, 1 * kMs);
}

TEST(ClockAlignment, RankDisplacedOnOneCommunicatorIsOutvotedByItsOthers) {
  // Rank 5's ends on its TP communicator are all 3 ms off (a broken pairing): its DP and world
  // collectives still place it, and the other TP members are not dragged along.
  SyntheticRun run = make_run({.tp = 8, .dp = 8, .jitter_ns = 1 * kUs, .seed = 5});
  uint64_t tp_comm_of_rank5 = 0;
  std::vector<uint64_t> comms_of_rank5;
  for (const CollectiveEnd& e : run.ends) {
    if (e.rank == 5) comms_of_rank5.push_back(e.comm_id);
  }
  // The TP communicator is the one rank 5 uses most often (2 ops per step against 1).
  std::sort(comms_of_rank5.begin(), comms_of_rank5.end());
  size_t best = 0;
  for (size_t i = 0; i < comms_of_rank5.size();) {
    size_t j = i;
    while (j < comms_of_rank5.size() && comms_of_rank5[j] == comms_of_rank5[i]) ++j;
    if (j - i > best) best = j - i, tp_comm_of_rank5 = comms_of_rank5[i];
    i = j;
  }
  for (CollectiveEnd& e : run.ends) {
    if (e.rank == 5 && e.comm_id == tp_comm_of_rank5) e.end_ns += 3'000'000;
  }
  const ClockAlignment a = align_clocks(run.ranks, run.ends);
  const std::vector<double> errors = offset_errors(run, a);
  EXPECT_LT(errors.back(), 5 * kUs);
}

TEST(ClockAlignment, DisconnectedRanksKeepTheirFirstEstimate) {
  // Ranks 0-2 share communicator A, ranks 3-7 communicator B (the largest component, so rank 3
  // is the reference), rank 8 has no collective at all.
  std::vector<CollectiveEnd> ends;
  for (uint64_t seq = 0; seq < 5; ++seq) {
    const int64_t t = 1000 * static_cast<int64_t>(seq);
    for (uint32_t r = 0; r < 3; ++r) ends.push_back({r, 0xA, seq, t + 7 * int64_t{r}});
    for (uint32_t r = 3; r < 8; ++r) ends.push_back({r, 0xB, seq, t - 100 * int64_t{r}});
  }
  const ClockAlignment a = align_clocks(9, ends);
  EXPECT_EQ(a.reference_rank, 3u);
  EXPECT_EQ(a.instances_used, 5u);
  EXPECT_EQ(a.refined, (std::vector<bool>{false, false, false, true, true, true, true, true, false}));
  EXPECT_EQ(a.offset_ns, (std::vector<int64_t>{0, 0, 0, 0, 100, 200, 300, 400, 0}));
  EXPECT_EQ(a.residual_max_ns, 0);
}

TEST(ClockAlignment, EqualComponentsPickTheOneHoldingTheLowestRank) {
  std::vector<CollectiveEnd> ends;
  for (uint64_t seq = 0; seq < 3; ++seq) {
    ends.push_back({2, 0xA, seq, 50});
    ends.push_back({3, 0xA, seq, 0});
    ends.push_back({1, 0xB, seq, 0});
    ends.push_back({4, 0xB, seq, 20});
  }
  const ClockAlignment a = align_clocks(5, ends);
  EXPECT_EQ(a.reference_rank, 1u);
  EXPECT_EQ(a.refined, (std::vector<bool>{false, true, false, false, true}));
  EXPECT_EQ(a.offset_ns, (std::vector<int64_t>{0, 0, 0, 0, -20}));
}

TEST(ClockAlignment, SingleRankIsItsOwnReference) {
  const std::vector<CollectiveEnd> ends = {{0, 1, 0, 100}, {0, 1, 1, 200}};
  const ClockAlignment a = align_clocks(1, ends);
  EXPECT_EQ(a.offset_ns, std::vector<int64_t>{0});
  EXPECT_EQ(a.refined, std::vector<bool>{false});
  EXPECT_EQ(a.reference_rank, 0u);
  EXPECT_EQ(a.instances_used, 0u);
  EXPECT_EQ(a.residual_max_ns, 0);
}

TEST(ClockAlignment, EmptyInputLeavesEveryRankAtItsFirstEstimate) {
  const ClockAlignment none = align_clocks(0, {});
  EXPECT_TRUE(none.offset_ns.empty());
  EXPECT_TRUE(none.refined.empty());
  const ClockAlignment four = align_clocks(4, {});
  EXPECT_EQ(four.offset_ns, std::vector<int64_t>(4, 0));
  EXPECT_EQ(four.refined, std::vector<bool>(4, false));
  EXPECT_EQ(four.instances_used, 0u);
  EXPECT_EQ(four.residual_median_ns, 0);
  EXPECT_EQ(four.residual_p99_ns, 0);
  EXPECT_EQ(four.residual_max_ns, 0);
}

TEST(ClockAlignment, RanksWithoutCollectivesAreNotRefined) {
  const std::vector<CollectiveEnd> ends = {{0, 9, 0, 1000}, {1, 9, 0, 400}, {0, 9, 1, 2000}, {1, 9, 1, 1400}};
  const ClockAlignment a = align_clocks(4, ends);
  EXPECT_EQ(a.refined, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(a.offset_ns, (std::vector<int64_t>{0, 600, 0, 0}));
  EXPECT_EQ(a.instances_used, 2u);
}

TEST(ClockAlignment, ForeignRanksAndDuplicateEndsDoNotCount) {
  // Rank 7 is outside the 2-rank trace set; rank 1's duplicated record counts once (earliest);
  // an instance left with one member is not used.
  const std::vector<CollectiveEnd> ends = {{0, 9, 0, 1000}, {1, 9, 0, 900},  {1, 9, 0, 5000},
                                           {7, 9, 0, 0},    {0, 9, 1, 3000}, {7, 9, 1, 3000}};
  const ClockAlignment a = align_clocks(2, ends);
  EXPECT_EQ(a.offset_ns, (std::vector<int64_t>{0, 100}));
  EXPECT_EQ(a.instances_used, 1u);
  EXPECT_EQ(a.residual_max_ns, 0);
}

TEST(ClockAlignment, CorruptTimestampsAtTheLimitsOfInt64StayDefined) {
  // Corrupt files can hold any value; the arithmetic wraps instead of overflowing (UBSan checks).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const std::vector<CollectiveEnd> ends = {{0, 1, 0, kMax}, {1, 1, 0, kMin}, {2, 1, 0, 0},
                                           {0, 2, 0, kMin}, {2, 2, 0, kMax}, {1, 3, 5, kMax},
                                           {2, 3, 5, kMax}, {0, 3, 5, kMin}};
  const ClockAlignment a = align_clocks(3, ends);
  EXPECT_EQ(a.offset_ns.size(), 3u);
  EXPECT_EQ(a.instances_used, 3u);
  EXPECT_EQ(a.offset_ns[0], 0);
}

TEST(ClockAlignment, ResidualStatisticsOnAHandBuiltRun) {
  // True corrections {0, +1010, -500}; ends are listed as corrected times (so every pair's
  // median difference is exactly 0 after correction) and observed = corrected - correction.
  const std::vector<int64_t> correction = {0, 1010, -500};
  struct Instance {
    uint64_t comm;
    uint64_t seq;
    std::vector<std::pair<uint32_t, int64_t>> corrected;
  };
  const std::vector<Instance> instances = {
      {0xA, 1, {{0, 1000}, {1, 1000}}},               // residuals 0 0
      {0xA, 2, {{0, 2000}, {1, 2010}}},               // consensus 2005: 5 5
      {0xA, 3, {{0, 3000}, {1, 2990}}},               // 5 5
      {0xB, 1, {{1, 5000}, {2, 5000}}},               // 0 0
      {0xB, 2, {{1, 6000}, {2, 6040}}},               // 20 20
      {0xB, 3, {{1, 7000}, {2, 6960}}},               // 20 20
      {0xC, 1, {{0, 8000}, {1, 8000}, {2, 8000}}},    // 0 0 0
      {0xC, 2, {{0, 9000}, {1, 9006}, {2, 9030}}},    // consensus 9006: 6 0 24
      {0xC, 3, {{0, 10000}, {1, 10000}, {2, 9970}}},  // consensus 10000: 0 0 30
  };
  std::vector<CollectiveEnd> ends;
  for (const Instance& i : instances) {
    for (auto [rank, t] : i.corrected) ends.push_back({rank, i.comm, i.seq, kEpochNs + t - correction[rank]});
  }
  const ClockAlignment a = align_clocks(3, ends);
  EXPECT_EQ(a.offset_ns, correction);
  EXPECT_EQ(a.instances_used, 9u);
  // 21 residuals, sorted: ten 0, four 5, 6, four 20, 24, 30. Median = 11th value = 5;
  // p99 interpolates at position 0.99 * 20 = 19.8 between 24 and 30: 28.8.
  EXPECT_DOUBLE_EQ(a.residual_median_ns, 5);
  EXPECT_NEAR(a.residual_p99_ns, 28.8, 1e-9);
  EXPECT_DOUBLE_EQ(a.residual_max_ns, 30);
}

TEST(ClockAlignment, RandomizedLayoutsAndSeeds) {
  // Random TP x DP x PP in Megatron order, 4 or 8 GPUs per host, jitter 0.5 to 3 us, up to 10%
  // late outliers, and sometimes no world communicator (then each pipeline stage is its own
  // component and only stage 0, holding rank 0, is aligned).
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    RunSpec spec;
    spec.tp = 1u << std::uniform_int_distribution<int>(0, 3)(rng);
    spec.dp = std::uniform_int_distribution<uint32_t>(1, 16)(rng);
    spec.pp = std::uniform_int_distribution<uint32_t>(1, 4)(rng);
    spec.gpus_per_host = std::bernoulli_distribution(0.5)(rng) ? 4 : 8;
    spec.world = std::bernoulli_distribution(0.8)(rng);
    spec.jitter_ns = std::uniform_real_distribution<double>(0.5 * kUs, 3 * kUs)(rng);
    spec.outlier_fraction = std::uniform_real_distribution<double>(0, 0.10)(rng);
    spec.seed = seed;
    SCOPED_TRACE(::testing::Message() << "seed " << seed << ": tp " << spec.tp << " dp " << spec.dp << " pp "
                                      << spec.pp << " world " << spec.world << " jitter " << spec.jitter_ns);
    const SyntheticRun run = make_run(spec);
    const ClockAlignment a = align_clocks(run.ranks, run.ends);
    ASSERT_EQ(a.offset_ns.size(), run.ranks);
    const uint32_t stage_ranks = spec.tp * spec.dp;
    const bool connected = spec.world || spec.pp == 1;
    const uint32_t aligned = connected ? run.ranks : stage_ranks;
    EXPECT_EQ(a.reference_rank, 0u);
    if (aligned < 2) {
      EXPECT_EQ(std::count(a.refined.begin(), a.refined.end(), true), 0);
      continue;
    }
    for (uint32_t r = 0; r < run.ranks; ++r) {
      EXPECT_EQ(a.refined[r], r < aligned) << "rank " << r;
      if (r >= aligned) {
        EXPECT_EQ(a.offset_ns[r], 0) << "rank " << r;
      }
    }
    const std::vector<double> errors = offset_errors(run, a);
    EXPECT_LT(errors.back(), 5 * kUs);
  }
}

TEST(ClockAlignment, ScalesToThousandRanksAndTwentyThousandInstances) {
  // 1,024 ranks (TP 8 x DP 128, 128 hosts), 146 steps of one TP, one DP and one world
  // collective: 146 * (128 + 8 + 1) = 20,002 instances, 448,512 ends.
  const SyntheticRun run =
      make_run({.tp = 8, .dp = 128, .steps = 146, .tp_ops_per_step = 1, .jitter_ns = 2 * kUs, .seed = 2});
  ASSERT_EQ(run.instances, 20'002u);
  // Its speed is the report benchmark's business; here, that the answer holds at this size.
  const ClockAlignment a = align_clocks(run.ranks, run.ends);
  const std::vector<double> errors = offset_errors(run, a);
  EXPECT_EQ(errors.size(), 1024u);
  EXPECT_LT(p99(errors), 2 * kUs);
  EXPECT_LT(errors.back(), 5 * kUs);
}

}  // namespace
}  // namespace pipescope::analysis
