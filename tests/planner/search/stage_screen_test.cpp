// Screening against the exact machinery on hand-made unit costs: the bound never exceeds the
// simulated iteration, the greedy finds a split that fits exactly when one exists (brute force
// over every split), and stage sums by layer kind equal unit-by-unit sums.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "pipescope/planner/interleaved_layout.h"
#include "pipescope/planner/pipeline_schedule.h"
#include "random_units.h"
#include "stage_screen.h"

namespace pipescope::planner::search_detail {
namespace {

constexpr int kOptions = 3;

using test::random_unit;

ScreeningCosts random_costs(std::mt19937& rng, int period) {
  ScreeningCosts c;
  c.embedding = random_unit(rng);
  c.head = random_unit(rng);
  for (int k = 0; k < period; ++k) c.layer_kinds.push_back(random_unit(rng));
  c.extra_bytes = 20;
  c.capacity_bytes = 1'000'000;
  c.p2p_s = 0.05;
  return c;
}

const UnitPrice& unit(const ScreeningCosts& c, int64_t layers, int u) {
  return u == 0 ? c.embedding : u == layers + 1 ? c.head : c.layer(u - 1);
}

// The iteration time frameworks would see: the simulated schedule on the stage (or chunk) sums
// plus the slowest stage's exposed sync and optimizer step.
double simulated_s(const ScreeningCosts& c, const PipelineShape& shape, const std::vector<int>& boundaries,
                   const std::vector<int>& options) {
  PipelineCosts pc;
  std::vector<StageSums> stages;
  for (int s = 0; s < shape.stages; ++s) {
    StageSums sums;
    for (int u = boundaries[s]; u < boundaries[s + 1]; ++u) sums.add(unit(c, shape.layers, u), 1);
    pc.forward_s.push_back(sums.forward_s[options[s]]);
    pc.backward_s.push_back(sums.backward_s[options[s]]);
    stages.push_back(sums);
  }
  pc.p2p_forward_s.assign(static_cast<size_t>(shape.stages) - 1, c.p2p_s);
  pc.p2p_backward_s = pc.p2p_forward_s;
  auto sim = simulate_schedule({shape.kind, shape.stages, shape.micro_batches, 1}, pc);
  EXPECT_TRUE(sim.ok());
  double tail = 0;
  for (int s = 0; s < shape.stages; ++s) {
    tail = std::max(
        tail, std::max(0.0, stages[s].dp_sync_s - stages[s].backward_s[options[s]]) + stages[s].optimizer_s);
  }
  return sim->iteration_s + tail;
}

TEST(StageSums, ByLayerKindEqualUnitByUnit) {
  std::mt19937 rng(7);
  const ScreeningCosts c = random_costs(rng, 3);
  const int64_t layers = 10;
  for (int first = 0; first < 12; ++first) {
    for (int end = first + 1; end <= 12; ++end) {
      const StageSums fast = sum_units(c, layers, first, end);
      StageSums slow;
      for (int u = first; u < end; ++u) slow.add(unit(c, layers, u), 1);
      EXPECT_EQ(fast.static_bytes, slow.static_bytes);
      EXPECT_EQ(fast.step_bytes, slow.step_bytes);
      for (int r = 0; r < kOptions; ++r) {
        EXPECT_EQ(fast.activation_bytes[r], slow.activation_bytes[r]);
        EXPECT_EQ(fast.transient_bytes[r], slow.transient_bytes[r]);
        EXPECT_NEAR(fast.forward_s[r], slow.forward_s[r], 1e-12);
        EXPECT_NEAR(fast.backward_s[r], slow.backward_s[r], 1e-12);
      }
    }
  }
}

TEST(PipelineShape, InFlightAndSplitAreThePlannersOwn) {
  for (ScheduleKind kind : {ScheduleKind::kOneFOneB, ScheduleKind::kGPipe}) {
    for (int p : {1, 2, 4, 5}) {
      for (int m : {1, 3, 8}) {
        auto shape = pipeline_shape(kind, p, m, 1, 10);
        ASSERT_TRUE(shape.ok());
        EXPECT_EQ(shape->in_flight, *activations_in_flight({kind, p, m, 1}));
        EXPECT_EQ(shape->uniform_boundaries, *uniform_boundaries(12, p, UniformLayout{}));
      }
    }
  }
}

TEST(UniformScreen, BoundNeverExceedsTheSimulatedIteration) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const ScreeningCosts c = random_costs(rng, 1 + trial % 2);
    const int p = 1 + trial % 5;
    const int m = 1 + (trial / 5) % 9;
    const ScheduleKind kind = trial % 3 == 0 ? ScheduleKind::kGPipe : ScheduleKind::kOneFOneB;
    auto shape = pipeline_shape(kind, p, m, 1, 12);
    ASSERT_TRUE(shape.ok());
    UniformScreen screen;
    screen.prepare(c, *shape);
    std::vector<int> options;
    for (int allowed : {0b001, 0b010, 0b100, 0b111}) {
      const Screened s = screen.screen(allowed, options);
      ASSERT_TRUE(s.fits);
      EXPECT_LE(s.bound_s, simulated_s(c, *shape, shape->uniform_boundaries, options) * (1 + 1e-12))
          << "trial " << trial << " allowed " << allowed;
    }
  }
}

// The bound never exceeds the simulated schedule, and the peak is that of walking each stage's op
// order with its chunks' own activation bytes (the head's chunk is in flight less often).
TEST(UniformScreen, InterleavedBoundAndPeakFollowTheSchedule) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 100; ++trial) {
    const ScreeningCosts c = random_costs(rng, 1);
    const int p = 2 + trial % 3, v = 2, m = p * (1 + trial % 3);
    // Every third trial's chunks do not split the layers evenly (a pinned vpp's baseline).
    const int64_t layers = p * v * 2 + (trial % 3 == 2 ? 1 : 0);
    auto shape = pipeline_shape(ScheduleKind::kInterleaved, p, m, v, layers);
    ASSERT_TRUE(shape.ok());
    UniformScreen screen;
    screen.prepare(c, *shape);
    std::vector<int> options;
    const Screened s = screen.screen(0b010, options);
    // Megatron's chunks: chunk g has layers [2g, 2g + 2), the embedding and the head at the ends;
    // with one layer more, the last chunk takes it.
    const std::vector<int64_t> chunk_layers = balanced_layout(layers, p * v);
    ASSERT_EQ(chunk_layers.back(), layers - int64_t{2} * (p * v - 1));
    PipelineCosts pc;
    double tail = 0;
    std::vector<double> sync(p, 0), optimizer(p, 0), backward(p, 0);
    std::vector<int64_t> chunk_activation, static_bytes(p, 0), transient(p, 0), step(p, 0);
    for (int g = 0; g < p * v; ++g) {
      const StageSums chunk = sum_units(c, layers, g == 0 ? 0 : 1 + 2 * g,
                                        g == p * v - 1 ? static_cast<int>(layers) + 2 : 3 + 2 * g);
      pc.forward_s.push_back(chunk.forward_s[1]);
      pc.backward_s.push_back(chunk.backward_s[1]);
      sync[g % p] += chunk.dp_sync_s;
      optimizer[g % p] += chunk.optimizer_s;
      backward[g % p] += chunk.backward_s[1];
      chunk_activation.push_back(chunk.activation_bytes[1]);
      static_bytes[g % p] += chunk.static_bytes;
      step[g % p] += chunk.step_bytes;
      transient[g % p] = std::max(transient[g % p], chunk.transient_bytes[1]);
    }
    auto order = schedule_op_order({ScheduleKind::kInterleaved, p, m, v});
    ASSERT_TRUE(order.ok());
    int64_t peak = 0;
    for (int st = 0; st < p; ++st) {
      int64_t alive = 0, fullest = 0;
      for (const ScheduledOp& op : (*order)[st]) {
        alive += (op.kind == OpKind::kForward ? 1 : -1) * chunk_activation[op.chunk * p + st];
        fullest = std::max(fullest, alive);
      }
      peak = std::max(peak, c.extra_bytes + static_bytes[st] + std::max(fullest + transient[st], step[st]));
    }
    EXPECT_EQ(s.peak_bytes, peak) << "trial " << trial;
    for (int st = 0; st < p; ++st)
      tail = std::max(tail, std::max(0.0, sync[st] - backward[st] / v) + optimizer[st]);
    pc.p2p_forward_s.assign(static_cast<size_t>(p * v - 1), c.p2p_s);
    pc.p2p_backward_s = pc.p2p_forward_s;
    auto sim = simulate_schedule({ScheduleKind::kInterleaved, p, m, v}, pc);
    ASSERT_TRUE(sim.ok());
    EXPECT_LE(s.bound_s, (sim->iteration_s + tail) * (1 + 1e-12)) << "trial " << trial;
  }
}

// Every contiguous split of n units into p non-empty stages, each stage on its least-memory option.
bool brute_force_fits(const ScreeningCosts& c, const PipelineShape& shape, int allowed) {
  const int n = static_cast<int>(shape.layers) + 2, p = shape.stages;
  std::vector<int> b(static_cast<size_t>(p) + 1, 0);
  b[p] = n;
  std::function<bool(int)> place = [&](int s) -> bool {
    if (s == p) {
      for (int k = 0; k < p; ++k) {
        StageSums sums;
        for (int u = b[k]; u < b[k + 1]; ++u) sums.add(unit(c, shape.layers, u), 1);
        bool any = false;
        for (int r = 0; r < kOptions; ++r) {
          any = any || ((allowed >> r & 1) &&
                        sums.memory_bytes(r, c.extra_bytes, shape.in_flight[k]) <= c.capacity_bytes);
        }
        if (!any) return false;
      }
      return true;
    }
    for (int end = b[s - 1] + 1; end <= n - (p - s); ++end) {
      b[s] = end;
      if (place(s + 1)) return true;
    }
    return false;
  };
  return place(1);
}

TEST(BalancedSplit, FindsASplitThatFitsExactlyWhenOneExists) {
  std::mt19937 rng(17);
  int fitting = 0, refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    ScreeningCosts c = random_costs(rng, 1 + trial % 2);
    const int p = 1 + trial % 4, m = 1 + trial % 6;
    const ScheduleKind kind = trial % 2 ? ScheduleKind::kOneFOneB : ScheduleKind::kGPipe;
    auto shape = pipeline_shape(kind, p, m, 1, 6);
    ASSERT_TRUE(shape.ok());
    // A capacity around what a stage of this pipeline needs, so that both answers occur.
    c.capacity_bytes = std::uniform_int_distribution<int64_t>(100, 2500)(rng);
    for (int allowed : {0b001, 0b100, 0b111}) {
      const bool expected = brute_force_fits(c, *shape, allowed);
      EXPECT_EQ(any_split_fits(c, *shape, allowed), expected) << "trial " << trial;
      std::vector<int> boundaries, options;
      ASSERT_EQ(balanced_split(c, *shape, allowed, boundaries, options), expected);
      (expected ? fitting : refused)++;
      if (!expected) continue;
      ASSERT_EQ(boundaries.size(), static_cast<size_t>(p) + 1);
      for (int s = 0; s < p; ++s) {
        ASSERT_LT(boundaries[s], boundaries[s + 1]);
        const StageSums sums = sum_units(c, 6, boundaries[s], boundaries[s + 1]);
        EXPECT_TRUE(allowed >> options[s] & 1);
        EXPECT_LE(sums.memory_bytes(options[s], c.extra_bytes, shape->in_flight[s]), c.capacity_bytes);
      }
    }
  }
  EXPECT_GT(fitting, 50);
  EXPECT_GT(refused, 50);
}

TEST(BalancedSplit, SlowestStageIsNoSlowerThanTheUniformSplitsWhenThatFits) {
  std::mt19937 rng(19);
  for (int trial = 0; trial < 100; ++trial) {
    const ScreeningCosts c = random_costs(rng, 1);
    auto shape = pipeline_shape(ScheduleKind::kOneFOneB, 1 + trial % 4, 8, 1, 8);
    ASSERT_TRUE(shape.ok());
    UniformScreen screen;
    screen.prepare(c, *shape);
    std::vector<int> uniform_options, boundaries, options;
    ASSERT_TRUE(screen.screen(0b001, uniform_options).fits);
    ASSERT_TRUE(balanced_split(c, *shape, 0b001, boundaries, options));
    double uniform_slowest = 0, balanced_slowest = 0;
    for (int s = 0; s < shape->stages; ++s) {
      uniform_slowest =
          std::max(uniform_slowest,
                   sum_units(c, 8, shape->uniform_boundaries[s], shape->uniform_boundaries[s + 1]).time_s(0));
      balanced_slowest =
          std::max(balanced_slowest, sum_units(c, 8, boundaries[s], boundaries[s + 1]).time_s(0));
    }
    EXPECT_LE(balanced_slowest, uniform_slowest * (1 + 1e-4)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace pipescope::planner::search_detail
