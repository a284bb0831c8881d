#include "stage_screen.h"

#include <algorithm>
#include <cmath>

#include "pipescope/planner/interleaved_layout.h"

namespace pipescope::planner::search_detail {
namespace {

const UnitPrice& unit_at(const ScreeningCosts& costs, int64_t layers, int u) {
  if (u == 0) return costs.embedding;
  if (u == layers + 1) return costs.head;
  return costs.layer(u - 1);
}

// The fastest allowed option within `limit_s` whose stage fits, or -1.
int fastest_fitting(const StageSums& s, int allowed, int64_t extra, int64_t in_flight, int64_t capacity,
                    double limit_s) {
  int best = -1;
  for (int r = 0; r < kRecomputeOptions; ++r) {
    if (!option_allowed(allowed, r) || s.memory_bytes(r, extra, in_flight) > capacity ||
        s.time_s(r) > limit_s)
      continue;
    if (best < 0 || s.time_s(r) < s.time_s(best)) best = r;
  }
  return best;
}

// Greedy: each stage takes units while some allowed option keeps it within memory and
// `limit_s`; stages left empty take single units off the end (each then needs no more than the
// stage it came from: later stages hold no more micro-batches, GPipe and 1F1B alike).
bool greedy_split(const ScreeningCosts& costs, const PipelineShape& shape, int allowed, double limit_s,
                  std::vector<int>& boundaries) {
  const int p = shape.stages;
  const int n = static_cast<int>(shape.layers) + 2;
  boundaries.assign(static_cast<size_t>(p) + 1, n);
  boundaries[0] = 0;
  int u = 0;
  for (int s = 0; s < p && u < n; ++s) {
    const int start = u;
    StageSums sums;
    while (u < n) {
      StageSums next = sums;
      next.add(unit_at(costs, shape.layers, u), 1);
      if (fastest_fitting(next, allowed, costs.extra_bytes, shape.in_flight[s], costs.capacity_bytes,
                          limit_s) < 0) {
        break;
      }
      sums = next;
      ++u;
    }
    if (u == start) return false;
    boundaries[s + 1] = u;
  }
  if (u < n) return false;
  for (int s = p - 1; s >= 1; --s) boundaries[s] = std::min(boundaries[s], boundaries[s + 1] - 1);
  return true;
}

bool pick_options(const ScreeningCosts& costs, const PipelineShape& shape, int allowed,
                  const std::vector<int>& boundaries, std::vector<int>& options) {
  options.assign(static_cast<size_t>(shape.stages), 0);
  for (int s = 0; s < shape.stages; ++s) {
    const StageSums sums = sum_units(costs, shape.layers, boundaries[s], boundaries[s + 1]);
    options[s] = fastest_fitting(sums, allowed, costs.extra_bytes, shape.in_flight[s], costs.capacity_bytes,
                                 kUnlimited);
    if (options[s] < 0) return false;
  }
  return true;
}

double tail_s(const ScreeningCosts& costs, const StageSums& s, int virtual_chunks, int option) {
  return exposed_sync_s(s.dp_sync_s, s.backward_s[option] / virtual_chunks, costs.sync_overlaps_backward,
                        costs.sync_overlap_slowdown) +
         s.optimizer_s;
}

}  // namespace

void StageSums::add(const UnitPrice& unit, int64_t count) {
  const double c = static_cast<double>(count);
  for (int r = 0; r < kRecomputeOptions; ++r) {
    forward_s[r] += c * unit.modes[r].forward_s;
    backward_s[r] += c * unit.modes[r].backward_s;
    activation_bytes[r] += count * unit.modes[r].activation_bytes;
    if (count > 0) transient_bytes[r] = std::max(transient_bytes[r], unit.modes[r].transient_bytes);
  }
  static_bytes += count * unit.static_bytes;
  step_bytes += count * unit.step_bytes;
  dp_sync_s += c * unit.dp_sync_s;
  optimizer_s += c * unit.optimizer_s;
}

StageSums sum_units(const ScreeningCosts& costs, int64_t layers, int first, int end) {
  StageSums s;
  if (first >= end) return s;
  if (first == 0) s.add(costs.embedding, 1);
  // Units 1..L are layers 0..L-1.
  const int64_t lo = std::max<int64_t>(first, 1) - 1;
  const int64_t hi = std::min<int64_t>(end, layers + 1) - 1;
  if (hi > lo) {
    const auto period = static_cast<int64_t>(costs.layer_kinds.size());
    for (int64_t kind = 0; kind < period; ++kind) {
      const int64_t count = layers_of_kind_below(hi, kind, period) - layers_of_kind_below(lo, kind, period);
      if (count > 0) s.add(costs.layer_kinds[static_cast<size_t>(kind)], count);
    }
  }
  if (end == layers + 2) s.add(costs.head, 1);
  return s;
}

Expected<PipelineShape> pipeline_shape(ScheduleKind kind, int stages, int micro_batches, int virtual_chunks,
                                       int64_t layers) {
  PipelineShape shape{kind, stages, micro_batches, virtual_chunks, layers, {}, {}, {}, {}, false};
  shape.in_flight.resize(static_cast<size_t>(stages));
  if (kind == ScheduleKind::kInterleaved) {
    auto mixes = in_flight_mixes({kind, stages, micro_batches, virtual_chunks});
    if (!mixes.ok()) return mixes.error();
    shape.in_flight = in_flight_counts(*mixes);
    shape.mixes = std::move(*mixes);
    shape.uniform_chunks = balanced_layout(layers, stages * virtual_chunks);
    return shape;
  }
  // pipeline_schedule.h: 1F1B holds min(p - s, m) micro-batches on stage s, GPipe all m.
  for (int s = 0; s < stages; ++s) {
    shape.in_flight[s] = kind == ScheduleKind::kGPipe ? micro_batches : std::min(stages - s, micro_batches);
  }
  auto boundaries = uniform_boundaries(static_cast<int>(layers) + 2, stages, UniformLayout{});
  if (!boundaries.ok()) return boundaries.error();
  shape.uniform_boundaries = std::move(*boundaries);
  return shape;
}

int allowed_options(RecomputeChoice choice, ScheduleKind kind) {
  switch (choice) {
    case RecomputeChoice::kNone: return 1 << 0;
    case RecomputeChoice::kSelective: return 1 << 1;
    case RecomputeChoice::kFull: return 1 << 2;
    case RecomputeChoice::kAuto: return kind == ScheduleKind::kInterleaved ? 1 << 1 : 0b111;
  }
  return 0;
}

void UniformScreen::prepare(const ScreeningCosts& costs, const PipelineShape& shape) {
  costs_ = &costs;
  shape_ = &shape;
  const int p = shape.stages;
  stages_.assign(static_cast<size_t>(p), StageSums{});
  held_activation_bytes_.assign(static_cast<size_t>(p), {});
  if (shape.kind != ScheduleKind::kInterleaved) {
    chunks_.clear();
    for (int s = 0; s < p; ++s) {
      stages_[s] =
          sum_units(costs, shape.layers, shape.uniform_boundaries[s], shape.uniform_boundaries[s + 1]);
      for (int r = 0; r < kRecomputeOptions; ++r)
        held_activation_bytes_[s][r] = shape.in_flight[s] * stages_[s].activation_bytes[r];
    }
    return;
  }
  // Megatron's uniform chunks (or the layers spread as evenly as they go where they do not divide):
  // the embedding joins chunk 0 and the head the last; stage s runs chunks s, s + p, ... (plan.cpp
  // does the same).
  const int chunks = p * shape.virtual_chunks;
  const int n = static_cast<int>(shape.layers) + 2;
  chunks_.assign(static_cast<size_t>(chunks), StageSums{});
  int64_t first_layer = 0;
  for (int g = 0; g < chunks; ++g) {
    const int64_t end_layer = first_layer + shape.uniform_chunks[g];
    const int first = g == 0 ? 0 : static_cast<int>(1 + first_layer);
    const int end = g == chunks - 1 ? n : static_cast<int>(1 + end_layer);
    first_layer = end_layer;
    chunks_[g] = sum_units(costs, shape.layers, first, end);
    StageSums& st = stages_[g % p];
    const StageSums& c = chunks_[g];
    for (int r = 0; r < kRecomputeOptions; ++r) {
      st.forward_s[r] += c.forward_s[r];
      st.backward_s[r] += c.backward_s[r];
      st.transient_bytes[r] = std::max(st.transient_bytes[r], c.transient_bytes[r]);
    }
    st.static_bytes += c.static_bytes;
    st.step_bytes += c.step_bytes;
    st.dp_sync_s += c.dp_sync_s;
    st.optimizer_s += c.optimizer_s;
  }
  std::vector<int64_t> chunk_bytes(static_cast<size_t>(shape.virtual_chunks));
  for (int s = 0; s < p; ++s) {
    for (int r = 0; r < kRecomputeOptions; ++r) {
      for (int k = 0; k < shape.virtual_chunks; ++k) chunk_bytes[k] = chunks_[k * p + s].activation_bytes[r];
      held_activation_bytes_[s][r] = peak_activation_bytes(shape.mixes[s], chunk_bytes);
    }
  }
}

Screened UniformScreen::screen(int allowed, std::vector<int>& options) const {
  const ScreeningCosts& costs = *costs_;
  const PipelineShape& shape = *shape_;
  const int p = shape.stages;
  options.assign(static_cast<size_t>(p), 0);
  Screened out;
  out.fits = true;
  for (int s = 0; s < p; ++s) {
    const StageSums& st = stages_[s];
    int best = -1;
    bool best_fits = false;
    int64_t best_bytes = 0;
    for (int r = 0; r < kRecomputeOptions; ++r) {
      if (!option_allowed(allowed, r)) continue;
      const int64_t bytes = st.held_memory_bytes(r, costs.extra_bytes, held_activation_bytes_[s][r]);
      const bool fits = bytes <= costs.capacity_bytes;
      const bool better = best < 0 || (fits && !best_fits) ||
                          (fits == best_fits && (fits ? st.time_s(r) < st.time_s(best) : bytes < best_bytes));
      if (better) best = r, best_fits = fits, best_bytes = bytes;
    }
    options[s] = best;
    out.fits = out.fits && best_fits;
    out.peak_bytes = std::max(out.peak_bytes, best_bytes);
    out.single_option = out.single_option && best == options[0];
  }
  out.option = options[0];
  if (!out.fits) return out;

  const double d = 2 * costs.p2p_s;
  double walk_s = 0, tail = 0, prefix_s = 0;
  for (int s = 0; s < p; ++s) {
    const int r = options[s];
    walk_s = std::max(walk_s, prefix_s + shape.micro_batches * stages_[s].time_s(r));
    tail = std::max(tail, tail_s(costs, stages_[s], shape.virtual_chunks, r));
    // Chunk s is stage s's own under GPipe and 1F1B, model chunk s under interleaving.
    prefix_s += (shape.kind == ScheduleKind::kInterleaved ? chunks_[s].time_s(r) : stages_[s].time_s(r)) + d;
  }
  out.bound_s = walk_s + tail + costs.step_fixed_s;
  return out;
}

double split_bound_s(const ScreeningCosts& costs, const PipelineShape& shape,
                     const std::vector<int>& boundaries, const std::vector<int>& options) {
  const double d = 2 * costs.p2p_s;
  double walk_s = 0, tail = 0, prefix_s = 0;
  for (int s = 0; s < shape.stages; ++s) {
    const StageSums st = sum_units(costs, shape.layers, boundaries[s], boundaries[s + 1]);
    const int r = options[s];
    walk_s = std::max(walk_s, prefix_s + shape.micro_batches * st.time_s(r));
    tail = std::max(tail, tail_s(costs, st, 1, r));
    prefix_s += st.time_s(r) + d;
  }
  return walk_s + tail + costs.step_fixed_s;
}

double any_split_bound_s(const ScreeningCosts& costs, const PipelineShape& shape, int allowed) {
  // With c_s the stages' times (sum W), T >= A_t = sum_{s<t} c_s + m c_t for every t. Keeping
  // every A_t <= A forces A - S_{t+1} >= (A - S_t)(1 - 1/m), so W <= A (1 - (1 - 1/m)^p). Also
  // T >= W + (p - 1) d, and no stage is faster than its slowest unit. The tail is at least the
  // average stage's optimizer step.
  const int n = static_cast<int>(shape.layers) + 2;
  double work_s = 0, slowest_unit_s = 0, optimizer_s = 0;
  for (int u = 0; u < n; ++u) {
    const UnitPrice& unit = unit_at(costs, shape.layers, u);
    double least = kUnlimited;
    for (int r = 0; r < kRecomputeOptions; ++r) {
      if (option_allowed(allowed, r))
        least = std::min(least, unit.modes[r].forward_s + unit.modes[r].backward_s);
    }
    work_s += least;
    slowest_unit_s = std::max(slowest_unit_s, least);
    optimizer_s += unit.optimizer_s;
  }
  const double m = shape.micro_batches, p = shape.stages;
  const double equalized_s = work_s / (1 - std::pow(1 - 1 / m, p));
  const double pipeline_s = std::max({equalized_s, work_s + (p - 1) * 2 * costs.p2p_s, m * slowest_unit_s});
  return pipeline_s + optimizer_s / p + costs.step_fixed_s;
}

bool any_split_fits(const ScreeningCosts& costs, const PipelineShape& shape, int allowed) {
  std::vector<int> boundaries;
  return greedy_split(costs, shape, allowed, kUnlimited, boundaries);
}

bool balanced_split(const ScreeningCosts& costs, const PipelineShape& shape, int allowed,
                    std::vector<int>& boundaries, std::vector<int>& options) {
  if (!greedy_split(costs, shape, allowed, kUnlimited, boundaries)) return false;
  // Bisect on the slowest stage's time: within `high` every stage's time is allowed, so the
  // limit only binds below it. A relative 1e-4 is far finer than one layer moving.
  double high = 0;
  const int n = static_cast<int>(shape.layers) + 2;
  for (int u = 0; u < n; ++u) {
    const UnitPrice& unit = unit_at(costs, shape.layers, u);
    double slowest = 0;
    for (int r = 0; r < kRecomputeOptions; ++r) {
      if (option_allowed(allowed, r))
        slowest = std::max(slowest, unit.modes[r].forward_s + unit.modes[r].backward_s);
    }
    high += slowest;
  }
  double low = 0;
  std::vector<int> trial;
  for (int i = 0; i < 60 && high - low > 1e-4 * high; ++i) {
    const double mid = 0.5 * (low + high);
    if (greedy_split(costs, shape, allowed, mid, trial)) {
      high = mid;
      boundaries.swap(trial);
    } else {
      low = mid;
    }
  }
  return pick_options(costs, shape, allowed, boundaries, options);
}

int64_t layers_of_kind_below(int64_t x, int64_t kind, int64_t period) {
  return x > kind ? (x - kind - 1) / period + 1 : 0;
}

}  // namespace pipescope::planner::search_detail
