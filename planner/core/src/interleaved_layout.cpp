#include "pipescope/planner/interleaved_layout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "pipescope/planner/dense_lp.h"

namespace pipescope::planner {
namespace {

// Layouts of `layers` over `chunks` chunks: C(layers + chunks - 1, chunks - 1), or `cap` + 1 when
// there are more than `cap`.
int64_t layout_count(int64_t layers, int chunks, int64_t cap) {
  double count = 1;
  for (int i = 1; i < chunks; ++i) {
    count = count * static_cast<double>(layers + i) / i;
    if (count > static_cast<double>(cap)) return cap + 1;
  }
  return static_cast<int64_t>(std::llround(count));
}

}  // namespace

Expected<LayoutEvaluator> LayoutEvaluator::make(const CostModel& costs, const ScheduleSpec& spec,
                                                int option) {
  auto mixes = in_flight_mixes(spec);
  if (!mixes.ok()) return mixes.error();
  auto dag = detail::ScheduleDag::build(spec);
  if (!dag.ok()) return dag.error();
  LayoutEvaluator evaluator(costs, spec, option, std::move(*mixes), std::move(*dag));
  const auto o = static_cast<size_t>(option);
  evaluator.identical_layers_ = costs.units.size() >= 3;  // a model has at least one layer
  for (size_t unit = 2; unit + 1 < costs.units.size(); ++unit) {
    const UnitCost &a = costs.units[unit], &b = costs.units[1];
    if (a.static_bytes != b.static_bytes || a.step_bytes != b.step_bytes ||
        a.by_mode[o].activation_bytes != b.by_mode[o].activation_bytes ||
        a.by_mode[o].transient_bytes != b.by_mode[o].transient_bytes)
      evaluator.identical_layers_ = false;
  }
  return evaluator;
}

int64_t LayoutEvaluator::stage_peak(const std::vector<int64_t>& chunk_layers, int stage) const {
  const int p = spec_.stages, v = spec_.virtual_chunks;
  const auto option = static_cast<size_t>(option_);
  int64_t static_bytes = 0, step_bytes = 0, transient_bytes = 0;
  std::vector<int64_t>& chunk_activation = activation_scratch_;
  chunk_activation.assign(static_cast<size_t>(v), 0);
  if (identical_layers_) {
    // Only the counts of the stage's own chunks matter.
    const UnitCost& layer = costs_->units[1];
    const auto add = [&](const UnitCost& u, int64_t times, int local_chunk) {
      static_bytes += times * u.static_bytes;
      step_bytes += times * u.step_bytes;
      chunk_activation[static_cast<size_t>(local_chunk)] += times * u.by_mode[option].activation_bytes;
      if (times > 0) transient_bytes = std::max(transient_bytes, u.by_mode[option].transient_bytes);
    };
    for (int k = 0; k < v; ++k) {
      const int g = k * p + stage;
      if (g == 0) add(costs_->units.front(), 1, k);
      add(layer, chunk_layers[static_cast<size_t>(g)], k);
      if (g == p * v - 1) add(costs_->units.back(), 1, k);
    }
    const int64_t activation = peak_activation_bytes(mixes_[static_cast<size_t>(stage)], chunk_activation);
    return stage_memory(*costs_, static_bytes, activation + transient_bytes, step_bytes).peak_memory_bytes;
  }
  const auto units = static_cast<int>(costs_->units.size());
  for_each_chunk_unit(chunk_layers, units, [&](int g, int unit) {
    if (g % p != stage) return;
    const UnitCost& u = costs_->units[static_cast<size_t>(unit)];
    static_bytes += u.static_bytes;
    step_bytes += u.step_bytes;
    chunk_activation[static_cast<size_t>(g / p)] += u.by_mode[option].activation_bytes;
    transient_bytes = std::max(transient_bytes, u.by_mode[option].transient_bytes);
  });
  const int64_t activation = peak_activation_bytes(mixes_[static_cast<size_t>(stage)], chunk_activation);
  return stage_memory(*costs_, static_bytes, activation + transient_bytes, step_bytes).peak_memory_bytes;
}

std::vector<int64_t> LayoutEvaluator::stage_peaks(const std::vector<int64_t>& chunk_layers) const {
  std::vector<int64_t> peaks(static_cast<size_t>(spec_.stages));
  stage_peaks(chunk_layers, peaks);
  return peaks;
}

void LayoutEvaluator::stage_peaks(const std::vector<int64_t>& chunk_layers,
                                  std::vector<int64_t>& peaks) const {
  for (int s = 0; s < spec_.stages; ++s) peaks[static_cast<size_t>(s)] = stage_peak(chunk_layers, s);
}

Expected<double> LayoutEvaluator::pipeline_s(const std::vector<int64_t>& chunk_layers) const {
  const int chunks_count = chunks();
  const auto option = static_cast<size_t>(option_);
  forward_s_.assign(static_cast<size_t>(chunks_count), 0.0);
  backward_s_.assign(static_cast<size_t>(chunks_count), 0.0);
  for_each_chunk_unit(chunk_layers, static_cast<int>(costs_->units.size()), [&](int g, int unit) {
    forward_s_[static_cast<size_t>(g)] += costs_->units[static_cast<size_t>(unit)].by_mode[option].forward_s;
    backward_s_[static_cast<size_t>(g)] +=
        costs_->units[static_cast<size_t>(unit)].by_mode[option].backward_s;
  });
  p2p_s_.assign(static_cast<size_t>(chunks_count - 1), costs_->p2p_s);
  return dag_.iteration_time(forward_s_, backward_s_, p2p_s_, p2p_s_, scratch_);
}

int64_t LayoutEvaluator::peak_lower_bound() const {
  const int p = spec_.stages, v = spec_.virtual_chunks, layer_count = layers();
  const auto option = static_cast<size_t>(option_);
  // The least any decoder layer adds: its static memory and one micro-batch's activations.
  double layer_static = std::numeric_limits<double>::max(), layer_activation = layer_static;
  for (int unit = 1; unit <= layer_count; ++unit) {
    const UnitCost& u = costs_->units[static_cast<size_t>(unit)];
    layer_static = std::min(layer_static, static_cast<double>(u.static_bytes));
    layer_activation = std::min(layer_activation, static_cast<double>(u.by_mode[option].activation_bytes));
  }
  // Per stage: the least its layers' activations can weigh at its fullest instant, per layer:
  // V = min over layer shares x of max over mixes of mix . x, the value of the game whose answer
  // is 1 / max{sum x : mixes x <= 1} (a small LP); the mixes weighted by the LP's dual (an
  // average of them, so never above the fullest) also weigh the embedding or the output layer.
  std::vector<double> base(static_cast<size_t>(p), 0.0), rate(static_cast<size_t>(p), 0.0);
  detail::DenseLp solver;
  for (int s = 0; s < p; ++s) {
    const auto& mixes = mixes_[static_cast<size_t>(s)];
    detail::LinearProgram lp;
    lp.rows = static_cast<int>(mixes.size());
    lp.cols = v;
    for (const ChunkMix& mix : mixes)
      for (int k = 0; k < v; ++k) lp.a.push_back(mix[static_cast<size_t>(k)]);
    lp.b.assign(static_cast<size_t>(lp.rows), 1.0);
    lp.c.assign(static_cast<size_t>(v), 1.0);
    const detail::LpSolution game = solver.solve(lp);
    double value = 0;                                         // unbounded: some chunk is never in flight
    std::vector<double> weight(static_cast<size_t>(v), 0.0);  // the dual's average of the mixes
    if (game.optimal && game.value > 0) {
      value = 1.0 / game.value;
      double dual_sum = 0;
      for (double y : game.dual) dual_sum += y;
      for (size_t i = 0; i < mixes.size() && dual_sum > 0; ++i) {
        for (int k = 0; k < v; ++k)
          weight[static_cast<size_t>(k)] += game.dual[i] / dual_sum * mixes[i][static_cast<size_t>(k)];
      }
    }
    rate[static_cast<size_t>(s)] = layer_static + value * layer_activation;
    const auto fixed_unit = [&](int unit, int local_chunk) {
      const UnitCost& u = costs_->units[static_cast<size_t>(unit)];
      base[static_cast<size_t>(s)] +=
          static_cast<double>(u.static_bytes) +
          weight[static_cast<size_t>(local_chunk)] * static_cast<double>(u.by_mode[option].activation_bytes);
    };
    if (s == 0) fixed_unit(0, 0);
    if (s == p - 1) fixed_unit(static_cast<int>(costs_->units.size()) - 1, v - 1);
  }
  // The least allocated M at which the stages can hold every layer: sum of (M - base) / rate >= L.
  const auto holds = [&](double m) {
    double layers_held = 0;
    for (int s = 0; s < p; ++s) {
      if (rate[static_cast<size_t>(s)] <= 0) return true;
      layers_held += std::max(0.0, m - base[static_cast<size_t>(s)]) / rate[static_cast<size_t>(s)];
    }
    return layers_held >= layer_count;
  };
  // Every stage holds at least its own embedding or output layer.
  double lo = *std::max_element(base.begin(), base.end());
  double hi = lo + layer_count * *std::max_element(rate.begin(), rate.end()) + 1;
  if (!holds(lo)) {
    for (int i = 0; i < 200 && hi - lo > 1; ++i) {
      const double mid = 0.5 * (lo + hi);
      (holds(mid) ? hi : lo) = mid;
    }
  }
  lo = std::floor(lo);
  return stage_memory(*costs_, static_cast<int64_t>(lo), 0, 0).peak_memory_bytes;
}

std::vector<int64_t> balanced_layout(int64_t layers, int chunks) {
  std::vector<int64_t> out(static_cast<size_t>(chunks), layers / chunks);
  const int64_t extra = layers % chunks;
  for (int64_t i = 0; i < extra; ++i) ++out[static_cast<size_t>(chunks - 1 - i)];
  return out;
}

Expected<LayoutSearchResult> search_layout(const LayoutEvaluator& evaluator,
                                           const std::vector<int64_t>& start, double time_limit_s,
                                           int64_t max_exhaustive) {
  const int chunks = evaluator.chunks(), p = evaluator.stages();
  const auto stages = static_cast<size_t>(p);
  const int64_t layers = evaluator.layers();
  // Buffers sized once: the loops below price thousands of layouts without allocating.
  std::vector<int64_t> peaks(stages), key(stages), best_key(stages);
  const auto sorted_peaks = [&](const std::vector<int64_t>& from, std::vector<int64_t>& into) {
    std::copy(from.begin(), from.end(), into.begin());
    std::sort(into.begin(), into.end(), std::greater<>());
  };
  LayoutSearchResult best;
  best.time_limit_s = time_limit_s;
  best.chunk_layers = start;
  evaluator.stage_peaks(start, peaks);
  sorted_peaks(peaks, best_key);
  auto start_time = evaluator.pipeline_s(start);
  if (!start_time.ok()) return start_time.error();
  best.pipeline_s = *start_time;
  const double limit = time_limit_s * (1 + 1e-12);

  if (layout_count(layers, chunks, max_exhaustive) <= max_exhaustive) {
    // Every layout, in lexicographic order of its chunk counts.
    std::vector<int64_t> layout(static_cast<size_t>(chunks), 0);
    const std::function<Status(int, int64_t)> visit = [&](int g, int64_t left) -> Status {
      if (g == chunks - 1) {
        layout[static_cast<size_t>(g)] = left;
        evaluator.stage_peaks(layout, peaks);
        sorted_peaks(peaks, key);
        if (key > best_key) return Status::Ok();
        auto t = evaluator.pipeline_s(layout);
        if (!t.ok()) return t.error();
        if (*t > limit) return Status::Ok();
        if (key < best_key || *t < best.pipeline_s) {
          best_key = key;
          best.chunk_layers = layout;
          best.pipeline_s = *t;
        }
        return Status::Ok();
      }
      for (int64_t n = 0; n <= left; ++n) {
        layout[static_cast<size_t>(g)] = n;
        if (Status s = visit(g + 1, left - n); !s) return s;
      }
      return Status::Ok();
    };
    if (Status s = visit(0, layers); !s) return s.error();
    best.exhaustive = true;
    best.peak_memory_bytes = best_key.front();
    best.lower_bound_bytes = best.peak_memory_bytes;
    return best;
  }

  // Descent: move one layer out of a chunk of a fullest stage into a chunk of another stage, the
  // move that lowers the sorted stage peaks most among those whose time holds. Moves are priced on
  // the current layout in place and undone.
  std::vector<int64_t> current = start;
  std::vector<int64_t> next_peaks(stages);
  struct Move {
    int from, to;
  };
  std::vector<Move> moves;
  std::vector<int64_t> move_keys;  // stages entries per move
  std::vector<size_t> order;
  const auto capacity = static_cast<size_t>(chunks) * static_cast<size_t>(chunks);
  moves.reserve(capacity);
  move_keys.reserve(capacity * stages);
  order.reserve(capacity);
  const auto key_of = [&](size_t m) { return move_keys.begin() + static_cast<std::ptrdiff_t>(m * stages); };
  for (int64_t step = 0; step < 8 * layers + 8; ++step) {
    evaluator.stage_peaks(current, peaks);
    const int64_t worst = *std::max_element(peaks.begin(), peaks.end());
    moves.clear();
    move_keys.clear();
    for (int from = 0; from < chunks; ++from) {
      if (current[static_cast<size_t>(from)] == 0 || peaks[static_cast<size_t>(from % p)] != worst) continue;
      for (int to = 0; to < chunks; ++to) {
        if (to % p == from % p) continue;
        --current[static_cast<size_t>(from)];
        ++current[static_cast<size_t>(to)];
        // With identical decoder layers only the two stages change; otherwise the layers between
        // the chunks shift too.
        if (evaluator.identical_layers()) {
          std::copy(peaks.begin(), peaks.end(), next_peaks.begin());
          for (int s : {from % p, to % p})
            next_peaks[static_cast<size_t>(s)] = evaluator.stage_peak(current, s);
        } else {
          evaluator.stage_peaks(current, next_peaks);
        }
        ++current[static_cast<size_t>(from)];
        --current[static_cast<size_t>(to)];
        sorted_peaks(next_peaks, key);
        if (key < best_key) {
          moves.push_back({from, to});
          move_keys.insert(move_keys.end(), key.begin(), key.end());
        }
      }
    }
    order.clear();
    for (size_t m = 0; m < moves.size(); ++m) order.push_back(m);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::lexicographical_compare(key_of(a), key_of(a) + static_cast<std::ptrdiff_t>(stages),
                                          key_of(b), key_of(b) + static_cast<std::ptrdiff_t>(stages));
    });
    bool moved = false;
    for (size_t m : order) {
      const Move& move = moves[m];
      --current[static_cast<size_t>(move.from)];
      ++current[static_cast<size_t>(move.to)];
      auto t = evaluator.pipeline_s(current);
      if (!t.ok()) return t.error();
      if (*t > limit) {
        ++current[static_cast<size_t>(move.from)];
        --current[static_cast<size_t>(move.to)];
        continue;
      }
      std::copy(key_of(m), key_of(m) + static_cast<std::ptrdiff_t>(stages), best_key.begin());
      best.pipeline_s = *t;
      moved = true;
      break;
    }
    if (!moved) break;
  }
  best.chunk_layers = current;
  best.peak_memory_bytes = best_key.front();
  best.lower_bound_bytes = std::min(evaluator.peak_lower_bound(), best.peak_memory_bytes);
  return best;
}

}  // namespace pipescope::planner
