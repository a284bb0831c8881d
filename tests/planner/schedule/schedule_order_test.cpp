// The op orders of the three schedules, the activations they keep alive, and the specs they
// refuse. Expected orders are written out from Megatron-LM's schedules.py by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pipescope/planner/pipeline_schedule.h"

namespace pipescope::planner {
namespace {

constexpr OpKind F = OpKind::kForward;
constexpr OpKind B = OpKind::kBackward;

std::vector<std::vector<ScheduledOp>> order_of(const ScheduleSpec& spec) {
  auto order = schedule_op_order(spec);
  EXPECT_TRUE(order.ok()) << order.error().message;
  return order.ok() ? *order : std::vector<std::vector<ScheduledOp>>{};
}

std::vector<int> in_flight_of(const ScheduleSpec& spec) {
  auto peak = activations_in_flight(spec);
  EXPECT_TRUE(peak.ok()) << peak.error().message;
  return peak.ok() ? *peak : std::vector<int>{};
}

TEST(OneFOneB, StageRunsWarmupThenAlternatesThenDrains) {
  // p = 3, m = 4. Stage 0 warms up with p - 0 - 1 = 2 forwards, the last stage with none.
  const auto order = order_of({ScheduleKind::kOneFOneB, 3, 4, 1});
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0],
            (std::vector<ScheduledOp>{
                {F, 0, 0}, {F, 0, 1}, {F, 0, 2}, {B, 0, 0}, {F, 0, 3}, {B, 0, 1}, {B, 0, 2}, {B, 0, 3}}));
  EXPECT_EQ(order[1],
            (std::vector<ScheduledOp>{
                {F, 0, 0}, {F, 0, 1}, {B, 0, 0}, {F, 0, 2}, {B, 0, 1}, {F, 0, 3}, {B, 0, 2}, {B, 0, 3}}));
  EXPECT_EQ(order[2],
            (std::vector<ScheduledOp>{
                {F, 0, 0}, {B, 0, 0}, {F, 0, 1}, {B, 0, 1}, {F, 0, 2}, {B, 0, 2}, {F, 0, 3}, {B, 0, 3}}));
}

TEST(OneFOneB, FewerMicrobatchesThanWarmupRunsAllForwardsFirst) {
  // p = 4, m = 2: stage 0 would warm up with 3 forwards but has only 2.
  const auto order = order_of({ScheduleKind::kOneFOneB, 4, 2, 1});
  EXPECT_EQ(order[0], (std::vector<ScheduledOp>{{F, 0, 0}, {F, 0, 1}, {B, 0, 0}, {B, 0, 1}}));
  EXPECT_EQ(order[3], (std::vector<ScheduledOp>{{F, 0, 0}, {B, 0, 0}, {F, 0, 1}, {B, 0, 1}}));
}

TEST(OneFOneB, FirstStageHoldsPMicrobatches) {
  EXPECT_EQ(in_flight_of({ScheduleKind::kOneFOneB, 8, 32, 1}).front(), 8);
}

TEST(OneFOneB, StageSHoldsMinOfPMinusSAndM) {
  for (int p : {1, 2, 3, 4, 7, 8}) {
    for (int m : {1, 2, 3, 5, 8, 16}) {
      const auto peak = in_flight_of({ScheduleKind::kOneFOneB, p, m, 1});
      ASSERT_EQ(peak.size(), static_cast<size_t>(p));
      for (int s = 0; s < p; ++s)
        EXPECT_EQ(peak[s], std::min(p - s, m)) << "p=" << p << " m=" << m << " s=" << s;
    }
  }
}

TEST(GPipe, RunsAllForwardsThenBackwardsLastMicrobatchFirst) {
  const auto order = order_of({ScheduleKind::kGPipe, 2, 3, 1});
  for (const auto& stage : order) {
    EXPECT_EQ(stage,
              (std::vector<ScheduledOp>{{F, 0, 0}, {F, 0, 1}, {F, 0, 2}, {B, 0, 2}, {B, 0, 1}, {B, 0, 0}}));
  }
}

TEST(GPipe, EveryStageHoldsAllMicrobatches) {
  EXPECT_EQ(in_flight_of({ScheduleKind::kGPipe, 4, 6, 1}), (std::vector<int>{6, 6, 6, 6}));
}

TEST(Interleaved, StageZeroOrderMatchesMegatron) {
  // p = 2, m = 4, v = 2: 8 virtual micro-batches; stage 0 warms up with 2 (p - 1) + (v - 1) p = 4.
  // Forward k runs chunk (k mod 4) / 2 on micro-batch (k / 4) * 2 + k mod 2; backward k the
  // chunk 1 - (k mod 4) / 2.
  const auto order = order_of({ScheduleKind::kInterleaved, 2, 4, 2});
  EXPECT_EQ(order[0], (std::vector<ScheduledOp>{{F, 0, 0},
                                                {F, 0, 1},
                                                {F, 1, 0},
                                                {F, 1, 1},  // warm-up
                                                {F, 0, 2},
                                                {B, 1, 0},
                                                {F, 0, 3},
                                                {B, 1, 1},
                                                {F, 1, 2},
                                                {B, 0, 0},
                                                {F, 1, 3},
                                                {B, 0, 1},  // steady
                                                {B, 1, 2},
                                                {B, 1, 3},
                                                {B, 0, 2},
                                                {B, 0, 3}}));  // drain
  // Stage 1 warms up with (v - 1) p = 2 only.
  EXPECT_EQ(order[1][2], (ScheduledOp{F, 1, 0}));
  EXPECT_EQ(order[1][3], (ScheduledOp{B, 1, 0}));
}

TEST(Interleaved, MicrobatchesEqualToStagesWarmUpLikeAnyOtherCount) {
  // Megatron-LM since its tunable schedule (November 2024) has no case of its own for m == p:
  // stage 0 warms up with 2 (p - 1) + (v - 1) p = 6 = m v forwards, all of them; stage 1 with 4.
  const auto order = order_of({ScheduleKind::kInterleaved, 2, 2, 3});
  for (size_t i = 0; i < order[0].size(); ++i) EXPECT_EQ(order[0][i].kind, i < 6 ? F : B) << i;
  EXPECT_EQ(order[1][4], (ScheduledOp{F, 2, 0}));
  EXPECT_EQ(order[1][5], (ScheduledOp{B, 2, 0}));
}

TEST(Interleaved, InFlightCountsChunkActivations) {
  // Stage s holds its 2 (p - s - 1) + (v - 1) p warm-up chunk-activations plus one, or all m v.
  EXPECT_EQ(in_flight_of({ScheduleKind::kInterleaved, 4, 8, 2}), (std::vector<int>{11, 9, 7, 5}));
  EXPECT_EQ(in_flight_of({ScheduleKind::kInterleaved, 4, 4, 2}), (std::vector<int>{8, 8, 7, 5}));
}

TEST(Interleaved, MicrobatchGroupsRunAsMegatronsScheduleTable) {
  // Megatron-LM's own example (model_parallel_config.py, microbatch_group_size_per_vp_stage):
  // p = 2, v = 2, N = 3, m = 5 runs forwards on micro-batches 0 1 2 0 1 2 3 4 3 4 through chunks
  // 0 0 0 1 1 1 0 0 1 1. Stage 0 warms up with 2 (p - 1) + (v - 1) N = 5.
  const auto order = order_of({ScheduleKind::kInterleaved, 2, 5, 2, 3});
  EXPECT_EQ(order[0],
            (std::vector<ScheduledOp>{{F, 0, 0}, {F, 0, 1}, {F, 0, 2}, {F, 1, 0}, {F, 1, 1},  // warm-up
                                      {F, 1, 2}, {B, 1, 0}, {F, 0, 3}, {B, 1, 1}, {F, 0, 4},
                                      {B, 1, 2}, {F, 1, 3}, {B, 0, 0}, {F, 1, 4}, {B, 0, 1},     // steady
                                      {B, 0, 2}, {B, 1, 3}, {B, 1, 4}, {B, 0, 3}, {B, 0, 4}}));  // drain
  // N = 2, m = 4: "rank 0 | 0 1 0 1 2 3 2 3", which is N = p, the default.
  EXPECT_EQ(order_of({ScheduleKind::kInterleaved, 2, 4, 2, 2}),
            order_of({ScheduleKind::kInterleaved, 2, 4, 2}));
}

TEST(Interleaved, LargerMicrobatchGroupsHoldMoreAndStillRunEveryOp) {
  // p = 4, v = 2, m = 16: each stage warms up (v - 1) N deeper; the simulation never deadlocks.
  for (int n : {4, 8, 16}) {
    const ScheduleSpec spec{ScheduleKind::kInterleaved, 4, 16, 2, n};
    const std::vector<int> held = in_flight_of(spec);
    for (int s = 0; s < 4; ++s) EXPECT_EQ(held[s], std::min(32, 2 * (4 - s - 1) + n + 1)) << "N=" << n;
    auto r = simulate_schedule(spec, {std::vector<double>(8, 1.0), std::vector<double>(8, 2.0), {}, {}});
    ASSERT_TRUE(r.ok()) << r.error().message;
    for (const StageTimeline& stage : r->stages) EXPECT_DOUBLE_EQ(stage.busy_s, 16 * 2 * 3.0);
  }
}

TEST(Interleaved, MixesSayHowOftenEachChunkIsInFlight) {
  // p = 2, v = 2, m = 4, walked by hand from the orders above. Stage 0 is fullest after F(c0, 3)
  // with 4 + 1 or after F(c1, 2) with 3 + 2; the last stage never holds its final chunk (the LM
  // head's) for more than one micro-batch, and holds 3 of its first at most.
  auto mixes = in_flight_mixes({ScheduleKind::kInterleaved, 2, 4, 2});
  ASSERT_TRUE(mixes.ok()) << mixes.error().message;
  ASSERT_EQ(mixes->size(), 2u);
  EXPECT_EQ((*mixes)[0], (std::vector<ChunkMix>{{3, 2}, {4, 1}}));
  EXPECT_EQ((*mixes)[1], (std::vector<ChunkMix>{{2, 1}, {3, 0}}));
  // A head chunk of 10 bytes against 1 for the other: one 10 and two 1s, not three 10s.
  EXPECT_EQ(peak_activation_bytes((*mixes)[1], {1, 10}), 12);
  EXPECT_EQ(peak_activation_bytes((*mixes)[1], {1, 1}), 3);
}

TEST(Interleaved, PeakActivationBytesIsTheFullestInstantOfTheOrder) {
  // Against walking the order with the bytes themselves, for chunk sizes that favour every chunk.
  for (int p : {2, 3, 4}) {
    for (int v : {2, 3}) {
      for (int m : {p, 2 * p, 3 * p}) {
        const ScheduleSpec spec{ScheduleKind::kInterleaved, p, m, v};
        const auto order = order_of(spec);
        auto mixes = in_flight_mixes(spec);
        ASSERT_TRUE(mixes.ok());
        for (int heavy = 0; heavy < v; ++heavy) {
          std::vector<int64_t> bytes(static_cast<size_t>(v), 3);
          bytes[static_cast<size_t>(heavy)] = 7 + heavy;
          for (int s = 0; s < p; ++s) {
            int64_t alive = 0, fullest = 0;
            for (const ScheduledOp& op : order[s]) {
              alive += (op.kind == F ? 1 : -1) * bytes[static_cast<size_t>(op.chunk)];
              fullest = std::max(fullest, alive);
            }
            EXPECT_EQ(peak_activation_bytes((*mixes)[s], bytes), fullest)
                << "p=" << p << " v=" << v << " m=" << m << " s=" << s << " heavy=" << heavy;
          }
        }
      }
    }
  }
}

TEST(Interleaved, RejectsMicrobatchesNotMultipleOfStages) {
  auto order = schedule_op_order({ScheduleKind::kInterleaved, 4, 6, 2});
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.error().message.find("multiple of pipeline stages"), std::string::npos)
      << order.error().message;
}

TEST(Interleaved, RefusesMicrobatchGroupsMegatronRefuses) {
  const auto refusal = [](const ScheduleSpec& spec) {
    auto order = schedule_op_order(spec);
    return order.ok() ? std::string("accepted") : order.error().message;
  };
  // N below p or above m; a last group of fewer than p micro-batches (m = 10, N = 4 leaves 2).
  EXPECT_NE(refusal({ScheduleKind::kInterleaved, 4, 8, 2, 3}).find("must lie between --pp 4 and the 8"),
            std::string::npos);
  EXPECT_NE(refusal({ScheduleKind::kInterleaved, 4, 8, 2, 9}).find("--vpp-group 9 must lie between"),
            std::string::npos);
  EXPECT_EQ(refusal({ScheduleKind::kInterleaved, 2, 10, 2, 4}), "accepted");  // leaves 2 = p
  EXPECT_NE(refusal({ScheduleKind::kInterleaved, 4, 10, 2, 4}).find("leaves a last group of 2 of the 10"),
            std::string::npos);
  // A last group of at least p is run: m = 10, N = 6, p = 4.
  EXPECT_EQ(refusal({ScheduleKind::kInterleaved, 4, 10, 2, 6}), "accepted");
  EXPECT_NE(refusal({ScheduleKind::kOneFOneB, 4, 8, 1, 4}).find("--vpp-group needs --schedule interleaved"),
            std::string::npos);
}

TEST(Interleaved, RejectsOneVirtualChunkAndOneStage) {
  EXPECT_FALSE(schedule_op_order({ScheduleKind::kInterleaved, 2, 4, 1}).ok());
  EXPECT_FALSE(schedule_op_order({ScheduleKind::kInterleaved, 1, 4, 2}).ok());
}

TEST(ScheduleSpec, RejectsVirtualChunksOutsideInterleaved) {
  auto order = schedule_op_order({ScheduleKind::kOneFOneB, 2, 4, 2});
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.error().message.find("interleaved"), std::string::npos);
}

TEST(ScheduleSpec, RejectsZeroStagesOrMicrobatches) {
  EXPECT_FALSE(schedule_op_order({ScheduleKind::kOneFOneB, 0, 4, 1}).ok());
  EXPECT_FALSE(schedule_op_order({ScheduleKind::kGPipe, 2, 0, 1}).ok());
}

TEST(ScheduleKind, SpellsLikeTheCommandLine) {
  EXPECT_EQ(to_string(ScheduleKind::kGPipe), "gpipe");
  EXPECT_EQ(to_string(ScheduleKind::kOneFOneB), "1f1b");
  EXPECT_EQ(to_string(ScheduleKind::kInterleaved), "interleaved");
}

}  // namespace
}  // namespace pipescope::planner
