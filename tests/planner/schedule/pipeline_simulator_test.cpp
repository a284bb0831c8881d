// The simulator against answers worked out by hand: closed forms for equal stages, timelines
// drawn for small unequal ones, p2p latency, fewer micro-batches than stages.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "pipescope/planner/pipeline_schedule.h"

namespace pipescope::planner {
namespace {

ScheduleResult simulate(const ScheduleSpec& spec, const PipelineCosts& costs) {
  auto result = simulate_schedule(spec, costs);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.ok() ? *result : ScheduleResult{};
}

PipelineCosts equal(int chunks, double f, double b) {
  return {std::vector<double>(chunks, f), std::vector<double>(chunks, b), {}, {}};
}

TEST(OneFOneB, EqualStagesTakeMPlusPMinusOneSlots) {
  // The last stage starts after p - 1 forwards, then runs m (f + b) without a gap; its last
  // backward then climbs p - 1 stages: (p - 1) f + m (f + b) + (p - 1) b.
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 4, 8, 13}) {
      const auto r = simulate({ScheduleKind::kOneFOneB, p, m, 1}, equal(p, 1.0, 2.0));
      EXPECT_DOUBLE_EQ(r.iteration_s, (m + p - 1) * 3.0) << "p=" << p << " m=" << m;
      EXPECT_DOUBLE_EQ(r.bubble_fraction, (p - 1.0) / (m + p - 1.0));
    }
  }
}

TEST(GPipe, EqualStagesTakeMPlusPMinusOneSlots) {
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 3, 8}) {
      const auto r = simulate({ScheduleKind::kGPipe, p, m, 1}, equal(p, 1.0, 2.0));
      EXPECT_DOUBLE_EQ(r.iteration_s, (m + p - 1) * 3.0) << "p=" << p << " m=" << m;
    }
  }
}

TEST(OneFOneB, SimulatedPeakHoldsMinOfPMinusSAndM) {
  for (int m : {2, 3, 6}) {
    const auto r = simulate({ScheduleKind::kOneFOneB, 4, m, 1}, equal(4, 1.0, 2.0));
    for (int s = 0; s < 4; ++s) EXPECT_EQ(r.stages[s].peak_activations, std::min(4 - s, m));
  }
}

TEST(GPipe, SimulatedPeakHoldsAllMicrobatches) {
  const auto r = simulate({ScheduleKind::kGPipe, 3, 5, 1}, equal(3, 1.0, 2.0));
  for (const auto& stage : r.stages) EXPECT_EQ(stage.peak_activations, 5);
}

TEST(OneFOneB, UnequalStagesFollowTheDrawnTimeline) {
  // p = 2, m = 2, F = (1, 2), B = (2, 4), no p2p. Stage 0 runs F0 F1 B0 B1, stage 1 F0 B0 F1 B1.
  //   stage 0: F0 [0,1]  F1 [1,2]  ......  B0 [7,9]  ..........  B1 [13,15]
  //   stage 1: .  F0 [1,3]  B0 [3,7]  F1 [7,9]  B1 [9,13]
  const auto r = simulate({ScheduleKind::kOneFOneB, 2, 2, 1}, {{1, 2}, {2, 4}, {}, {}});
  EXPECT_DOUBLE_EQ(r.iteration_s, 15.0);
  const std::vector<std::pair<double, double>> stage0{{0, 1}, {1, 2}, {7, 9}, {13, 15}};
  const std::vector<std::pair<double, double>> stage1{{1, 3}, {3, 7}, {7, 9}, {9, 13}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(r.stages[0].ops[i].start_s, stage0[i].first) << i;
    EXPECT_DOUBLE_EQ(r.stages[0].ops[i].end_s, stage0[i].second) << i;
    EXPECT_DOUBLE_EQ(r.stages[1].ops[i].start_s, stage1[i].first) << i;
    EXPECT_DOUBLE_EQ(r.stages[1].ops[i].end_s, stage1[i].second) << i;
  }
  EXPECT_DOUBLE_EQ(r.stages[0].busy_s, 6.0);
  EXPECT_DOUBLE_EQ(r.stages[0].idle_s, 9.0);
  EXPECT_DOUBLE_EQ(r.stages[1].busy_s, 12.0);
  EXPECT_DOUBLE_EQ(r.stages[1].idle_s, 3.0);
  EXPECT_DOUBLE_EQ(r.bubble_fraction, 1.0 - 18.0 / 30.0);
}

TEST(OneFOneB, SlowStageCostsMoreLast) {
  // The same stage times {3, 6} as above, slow stage first: F = (2, 1), B = (4, 2).
  //   stage 0: F0 [0,2]  F1 [2,4]  .  B0 [5,9]  B1 [9,13]
  //   stage 1: .  F0 [2,3]  B0 [3,5]  F1 [5,6]  B1 [6,8]
  // 13 s instead of 15: the iteration time is not a function of (max, sum) of stage times.
  const auto r = simulate({ScheduleKind::kOneFOneB, 2, 2, 1}, {{2, 1}, {4, 2}, {}, {}});
  EXPECT_DOUBLE_EQ(r.iteration_s, 13.0);
  EXPECT_DOUBLE_EQ(r.stages[0].ops[2].start_s, 5.0);
  EXPECT_DOUBLE_EQ(r.stages[1].ops[3].end_s, 8.0);
}

TEST(OneFOneB, P2pDelaysEveryHandOff) {
  // p = 2, m = 2, f = 1, b = 2, 0.5 s each way.
  //   stage 0: F0 [0,1]  F1 [1,2]  ......  B0 [5,7]  ......  B1 [8,10]
  //   stage 1: .  F0 [1.5,2.5]  B0 [2.5,4.5]  F1 [4.5,5.5]  B1 [5.5,7.5]
  const auto r = simulate({ScheduleKind::kOneFOneB, 2, 2, 1}, {{1, 1}, {2, 2}, {0.5}, {0.5}});
  EXPECT_DOUBLE_EQ(r.iteration_s, 10.0);
  EXPECT_DOUBLE_EQ(r.stages[1].ops[0].start_s, 1.5);
  EXPECT_DOUBLE_EQ(r.stages[0].ops[2].start_s, 5.0);
  EXPECT_DOUBLE_EQ(r.stages[0].ops[3].start_s, 8.0);
}

TEST(OneFOneB, SingleMicrobatchIsOneTripDownAndUp) {
  // m = 1: F down the stages, B back up, each boundary crossed once each way.
  const auto r = simulate({ScheduleKind::kOneFOneB, 3, 1, 1}, {{1, 2, 3}, {4, 5, 6}, {0.25, 0.5}, {1, 2}});
  EXPECT_DOUBLE_EQ(r.iteration_s, 1 + 2 + 3 + 4 + 5 + 6 + 0.25 + 0.5 + 1 + 2);
}

TEST(OneFOneB, FewerMicrobatchesThanStages) {
  // p = 4, m = 2, f = 1, b = 2: still (m + p - 1)(f + b); stage 3 holds 1, the others 2.
  const auto r = simulate({ScheduleKind::kOneFOneB, 4, 2, 1}, equal(4, 1.0, 2.0));
  EXPECT_DOUBLE_EQ(r.iteration_s, 15.0);
  EXPECT_EQ(r.stages[0].peak_activations, 2);
  EXPECT_EQ(r.stages[3].peak_activations, 1);
}

TEST(GPipe, UnequalStagesFollowTheFlowShopFormula) {
  // All forwards form a flow shop: the longest staircase from (stage 0, F0) to (stage p-1,
  // F m-1) crosses every stage once and stays m - 1 extra steps on the slowest one. The
  // backwards form a second flow shop back up. With p2p paid once per boundary each way:
  //   T = sum F + (m - 1) max F + sum B + (m - 1) max B + sum p2p.
  // F = (1, 3, 2), B = (2, 1, 5), m = 4, p2p 0.5 each way: 6 + 9 + 8 + 15 + 2 = 40.
  const auto r = simulate({ScheduleKind::kGPipe, 3, 4, 1}, {{1, 3, 2}, {2, 1, 5}, {0.5, 0.5}, {0.5, 0.5}});
  EXPECT_DOUBLE_EQ(r.iteration_s, 40.0);
}

TEST(PipelineSimulator, EveryOpStartsAfterItsInputAndItsStagePredecessor) {
  const auto r =
      simulate({ScheduleKind::kOneFOneB, 3, 5, 1}, {{1, 3, 2}, {2, 1, 5}, {0.5, 0.25}, {0.125, 1}});
  for (const auto& stage : r.stages) {
    for (size_t i = 1; i < stage.ops.size(); ++i) EXPECT_GE(stage.ops[i].start_s, stage.ops[i - 1].end_s);
  }
  // Forward of micro-batch 2 on stage 1 waits for stage 0's plus 0.5 s.
  const auto find = [&](int s, OpKind kind, int mb) {
    for (const auto& t : r.stages[s].ops) {
      if (t.op.kind == kind && t.op.micro_batch == mb) return t;
    }
    return OpTiming{};
  };
  EXPECT_GE(find(1, OpKind::kForward, 2).start_s, find(0, OpKind::kForward, 2).end_s + 0.5);
  EXPECT_GE(find(1, OpKind::kBackward, 2).start_s, find(2, OpKind::kBackward, 2).end_s + 1.0);
}

TEST(PipelineSimulator, RejectsCostsOfTheWrongShape) {
  const ScheduleSpec spec{ScheduleKind::kOneFOneB, 3, 4, 1};
  EXPECT_FALSE(simulate_schedule(spec, {{1, 1}, {1, 1, 1}, {}, {}}).ok());
  EXPECT_FALSE(simulate_schedule(spec, {{1, 1, 1}, {1, 1, 1}, {0.1}, {}}).ok());
  EXPECT_FALSE(simulate_schedule(spec, {{1, -1, 1}, {1, 1, 1}, {}, {}}).ok());
}

TEST(PipelineSimulator, ZeroCostsGiveZeroTimeAndNoBubble) {
  const auto r = simulate({ScheduleKind::kGPipe, 2, 2, 1}, equal(2, 0.0, 0.0));
  EXPECT_EQ(r.iteration_s, 0.0);
  EXPECT_EQ(r.bubble_fraction, 0.0);
}

}  // namespace
}  // namespace pipescope::planner
