// The interleaved schedule against Narayanan et al. (SC'21, section 2.2): with v chunks per
// stage, equal chunks and no p2p, the pipeline fills in p - 1 chunk-forwards and drains in p - 1
// chunk-backwards, so with per-chunk times f_c = f / v, b_c = b / v
//   T = m v (f_c + b_c) + (p - 1)(f_c + b_c) = (m + (p - 1) / v)(f + b),
// and the bubble over the ideal time is (p - 1) / (v m).
#include <gtest/gtest.h>

#include <vector>

#include "pipescope/planner/pipeline_schedule.h"

namespace pipescope::planner {
namespace {

struct Case {
  int p, m, v;
};

ScheduleResult simulate_equal_chunks(const Case& c, double f_chunk, double b_chunk) {
  const int chunks = c.p * c.v;
  auto r =
      simulate_schedule({ScheduleKind::kInterleaved, c.p, c.m, c.v},
                        {std::vector<double>(chunks, f_chunk), std::vector<double>(chunks, b_chunk), {}, {}});
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : ScheduleResult{};
}

TEST(Interleaved, EqualChunksTakeMPlusPMinusOneOverVSlots) {
  // Per chunk f_c = 1, b_c = 2, so per stage and micro-batch f + b = 3 v: T = 3 (m v + p - 1).
  for (const Case& c : {Case{2, 2, 2}, Case{2, 4, 2}, Case{4, 4, 2}, Case{4, 8, 2}, Case{4, 8, 4},
                        Case{3, 6, 3}, Case{4, 12, 3}, Case{8, 16, 2}}) {
    const auto r = simulate_equal_chunks(c, 1.0, 2.0);
    EXPECT_DOUBLE_EQ(r.iteration_s, 3.0 * (c.m * c.v + c.p - 1))
        << "p=" << c.p << " m=" << c.m << " v=" << c.v;
  }
}

TEST(Interleaved, BubbleOverIdealTimeIsNarayanansFormula) {
  for (const Case& c : {Case{4, 8, 2}, Case{4, 8, 4}, Case{8, 16, 2}, Case{3, 9, 3}}) {
    const auto r = simulate_equal_chunks(c, 0.5, 1.5);
    for (const StageTimeline& stage : r.stages) {
      // Every stage is busy m v (f_c + b_c), the ideal time; the rest of T is bubble.
      EXPECT_DOUBLE_EQ(stage.busy_s, c.m * c.v * 2.0);
      EXPECT_DOUBLE_EQ(stage.idle_s / stage.busy_s, (c.p - 1.0) / (c.v * c.m));
    }
    const double x = (c.p - 1.0) / (c.v * c.m);
    EXPECT_DOUBLE_EQ(r.bubble_fraction, x / (1 + x));
  }
}

TEST(Interleaved, ShrinksTheBubbleOfOneFOneB) {
  // Same work per stage (f = 2, b = 4 per micro-batch), p = 4, m = 8: 1F1B takes
  // (m + p - 1) 6 = 66, interleaving with v = 2 takes (m + 3 / 2) 6 = 57.
  auto one = simulate_schedule({ScheduleKind::kOneFOneB, 4, 8, 1}, {{2, 2, 2, 2}, {4, 4, 4, 4}, {}, {}});
  ASSERT_TRUE(one.ok());
  const auto two = simulate_equal_chunks({4, 8, 2}, 1.0, 2.0);
  EXPECT_DOUBLE_EQ(one->iteration_s, 66.0);
  EXPECT_DOUBLE_EQ(two.iteration_s, 57.0);
}

TEST(Interleaved, PeakCountsChunkActivations) {
  const auto r = simulate_equal_chunks({4, 8, 2}, 1.0, 2.0);
  const std::vector<int> expected{11, 9, 7, 5};  // 2 (p - s - 1) + (v - 1) p + 1
  for (int s = 0; s < 4; ++s) EXPECT_EQ(r.stages[s].peak_activations, expected[s]);
}

TEST(Interleaved, WrapAroundHandOffPaysP2p) {
  // p = 2, m = 2, v = 2 (stage 0 runs every forward first, stage 1 two), every chunk op 1 s; p2p
  // only across model chunks 1 | 2 (stage 1 back to stage 0), 10 s each way. g = model chunk,
  // b = micro-batch.
  //   no p2p: F g2 b0 [2,3] ... B g3 b1 [6,7], B g2 b1 [7,8], B g1 b0 [7,8], B g1 b1 [8,9],
  //           B g0 b1 [9,10]: 10
  //   p2p:    F g2 b0 waits for 2 + 10 -> [12,13], B g3 b0 [14,15], B g2 b0 [15,16], B g1 b0 waits
  //           for 16 + 10 -> [26,27], B g2 b1 [17,18], B g1 b1 waits for 28 -> [28,29],
  //           B g0 b1 [29,30]: 30
  auto r = simulate_schedule({ScheduleKind::kInterleaved, 2, 2, 2},
                             {{1, 1, 1, 1}, {1, 1, 1, 1}, {0, 10, 0}, {0, 10, 0}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto no_p2p =
      simulate_schedule({ScheduleKind::kInterleaved, 2, 2, 2}, {{1, 1, 1, 1}, {1, 1, 1, 1}, {}, {}});
  ASSERT_TRUE(no_p2p.ok());
  EXPECT_DOUBLE_EQ(no_p2p->iteration_s, 10.0);
  EXPECT_DOUBLE_EQ(r->iteration_s, 30.0);
}

}  // namespace
}  // namespace pipescope::planner
