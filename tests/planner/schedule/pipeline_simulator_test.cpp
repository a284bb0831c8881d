// The simulator against answers worked out by hand: closed forms for equal stages, timelines
// drawn for small unequal ones, p2p latency, fewer micro-batches than stages.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
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

TEST(OneFOneB, EqualStagesTakeMPlusPMinusOneSlotsAtScale) {
  // The same closed form at the sizes the planner meets: up to 64 stages and 4 micro-batches a
  // stage, fewer micro-batches than stages included.
  for (int p : {16, 32, 64}) {
    for (int m : {1, p / 2, p, 2 * p, 4 * p}) {
      const auto r = simulate({ScheduleKind::kOneFOneB, p, m, 1}, equal(p, 1.0, 2.0));
      EXPECT_DOUBLE_EQ(r.iteration_s, (m + p - 1) * 3.0) << "p=" << p << " m=" << m;
      EXPECT_DOUBLE_EQ(r.bubble_fraction, (p - 1.0) / (m + p - 1.0)) << "p=" << p << " m=" << m;
    }
  }
}

TEST(OneFOneB, P2pLatencyAddsAtLeastOneTripDownAndUp) {
  // With latency d each way, micro-batch 0's forwards down the stages, the last stage's m
  // forward-backward pairs and the last micro-batch's backwards back up form a path of
  // (p - 1)(f + d) + m (f + b) + (p - 1)(b + d) = (m + p - 1)(f + b) + 2 (p - 1) d; with one
  // micro-batch that path is the whole schedule. In steady state 1F1B waits on round trips
  // across boundaries too, so with more micro-batches the time can only be longer.
  for (int p : {2, 8, 32, 64}) {
    const double d = 0.25;
    PipelineCosts costs = equal(p, 1.0, 2.0);
    costs.p2p_forward_s.assign(p - 1, d);
    costs.p2p_backward_s.assign(p - 1, d);
    EXPECT_DOUBLE_EQ(simulate({ScheduleKind::kOneFOneB, p, 1, 1}, costs).iteration_s,
                     p * 3.0 + 2 * (p - 1) * d);
    for (int m : {p / 2, p, 4 * p}) {
      if (m < 1) continue;
      EXPECT_GE(simulate({ScheduleKind::kOneFOneB, p, m, 1}, costs).iteration_s,
                (m + p - 1) * 3.0 + 2 * (p - 1) * d)
          << "p=" << p << " m=" << m;
    }
  }
}

// The iteration time as the longest path of the schedule's graph, computed here independently of
// the simulator: relax every op's end time, max(its stage's previous op, its input + p2p) plus
// its duration, until nothing changes.
double longest_path_by_relaxation(const ScheduleSpec& spec, const PipelineCosts& costs) {
  const auto order = schedule_op_order(spec);
  EXPECT_TRUE(order.ok());
  const int p = spec.stages;
  std::vector<std::vector<double>> end(p);
  for (int s = 0; s < p; ++s) end[s].assign(order->at(s).size(), 0.0);
  const auto end_of = [&](int s, OpKind kind, int mb) {
    for (size_t i = 0; i < order->at(s).size(); ++i) {
      if (order->at(s)[i].kind == kind && order->at(s)[i].micro_batch == mb) return end[s][i];
    }
    ADD_FAILURE() << "no op";
    return 0.0;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int s = 0; s < p; ++s) {
      for (size_t i = 0; i < order->at(s).size(); ++i) {
        const ScheduledOp& op = order->at(s)[i];
        double start = i > 0 ? end[s][i - 1] : 0.0;
        if (op.kind == OpKind::kForward && s > 0) {
          start =
              std::max(start, end_of(s - 1, OpKind::kForward, op.micro_batch) + costs.p2p_forward_s[s - 1]);
        } else if (op.kind == OpKind::kBackward && s + 1 < p) {
          start = std::max(start, end_of(s + 1, OpKind::kBackward, op.micro_batch) + costs.p2p_backward_s[s]);
        }
        const double value = start + (op.kind == OpKind::kForward ? costs.forward_s[s] : costs.backward_s[s]);
        if (value > end[s][i]) {
          end[s][i] = value;
          changed = true;
        }
      }
    }
  }
  double last = 0;
  for (const auto& stage : end) last = std::max(last, stage.back());
  return last;
}

TEST(OneFOneB, UnequalStagesWithLatencyMatchTheLongestPathAtScale) {
  // Random unequal stages and per-boundary latencies, 16 and 24 stages, m from 1 to 2p.
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> cost(0.5, 3.0), latency(0.0, 0.4);
  for (int p : {16, 24}) {
    for (int m : {1, 5, p, 2 * p}) {
      PipelineCosts costs;
      for (int s = 0; s < p; ++s) {
        costs.forward_s.push_back(cost(rng));
        costs.backward_s.push_back(2 * cost(rng));
      }
      for (int s = 0; s + 1 < p; ++s) {
        costs.p2p_forward_s.push_back(latency(rng));
        costs.p2p_backward_s.push_back(latency(rng));
      }
      for (ScheduleKind kind : {ScheduleKind::kOneFOneB, ScheduleKind::kGPipe}) {
        const ScheduleSpec spec{kind, p, m, 1};
        EXPECT_NEAR(simulate(spec, costs).iteration_s, longest_path_by_relaxation(spec, costs), 1e-9)
            << "p=" << p << " m=" << m;
      }
    }
  }
}

TEST(GPipe, EqualStagesWithLatencyFollowTheFlowShopAtScale) {
  // GPipe's forwards and backwards are two flow shops, each boundary crossed once each way:
  // (m + p - 1)(f + b) + (p - 1)(d_f + d_b).
  for (int p : {16, 64}) {
    for (int m : {1, p, 4 * p}) {
      PipelineCosts costs = equal(p, 1.0, 2.0);
      costs.p2p_forward_s.assign(p - 1, 0.25);
      costs.p2p_backward_s.assign(p - 1, 0.5);
      EXPECT_DOUBLE_EQ(simulate({ScheduleKind::kGPipe, p, m, 1}, costs).iteration_s,
                       (m + p - 1) * 3.0 + (p - 1) * 0.75)
          << "p=" << p << " m=" << m;
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

TEST(OneFOneB, StagesThatWaitForTheirSendsAreBusyForThem) {
  // The same with each send holding its stage (ScheduleSpec::p2p_blocks): stage 0's forwards
  // end 0.5 after their compute, stage 1's backwards too, and the receiver starts when the
  // sender's op ends. Busy is compute; the waits are idle.
  //   stage 0: F0 [0,1.5]  F1 [1.5,3]  ......  B0 [5,7]  ....  B1 [8.5,10.5]
  //   stage 1: .  F0 [1.5,2.5]  B0 [2.5,5]  F1 [5,6]  B1 [6,8.5]
  ScheduleSpec spec{ScheduleKind::kOneFOneB, 2, 2, 1};
  spec.p2p_blocks = true;
  const auto r = simulate(spec, {{1, 1}, {2, 2}, {0.5}, {0.5}});
  EXPECT_DOUBLE_EQ(r.iteration_s, 10.5);
  EXPECT_DOUBLE_EQ(r.stages[0].ops[1].end_s, 3.0);
  EXPECT_DOUBLE_EQ(r.stages[1].ops[2].start_s, 5.0);
  EXPECT_DOUBLE_EQ(r.stages[0].ops[3].start_s, 8.5);
  EXPECT_DOUBLE_EQ(r.stages[0].busy_s, 6.0);
  EXPECT_DOUBLE_EQ(r.stages[1].idle_s, 4.5);
}

TEST(PipelineSimulator, WaitingForTheSendsNeverEndsAnOpEarlier) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> time(0.1, 3.0);
  for (const ScheduleSpec& shape :
       {ScheduleSpec{ScheduleKind::kOneFOneB, 4, 9, 1}, ScheduleSpec{ScheduleKind::kGPipe, 3, 5, 1},
        ScheduleSpec{ScheduleKind::kInterleaved, 4, 8, 2}}) {
    const int chunks = shape.stages * shape.virtual_chunks;
    PipelineCosts costs;
    for (int g = 0; g < chunks; ++g) {
      costs.forward_s.push_back(time(rng));
      costs.backward_s.push_back(time(rng));
      if (g + 1 < chunks) {
        costs.p2p_forward_s.push_back(time(rng) / 4);
        costs.p2p_backward_s.push_back(time(rng) / 4);
      }
    }
    ScheduleSpec blocking = shape;
    blocking.p2p_blocks = true;
    const auto latency = simulate(shape, costs);
    const auto blocked = simulate(blocking, costs);
    ASSERT_EQ(latency.stages.size(), blocked.stages.size());
    for (size_t s = 0; s < latency.stages.size(); ++s) {
      for (size_t i = 0; i < latency.stages[s].ops.size(); ++i) {
        EXPECT_GE(blocked.stages[s].ops[i].end_s, latency.stages[s].ops[i].end_s)
            << "stage " << s << " op " << i;
      }
    }
    EXPECT_GT(blocked.iteration_s, latency.iteration_s);
  }
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
