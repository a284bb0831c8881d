#include "layout_bound.h"

#include <algorithm>
#include <cmath>

#include "pipescope/planner/dense_lp.h"

namespace pipescope::planner::search_detail {
namespace {

// The time limit is simulated here on screening costs and by the planner on its own: keep the
// caps it sets a hair looser than the planner's.
constexpr double kLimitSlack = 1 + 1e-9;

// max z subject to z <= sum_q lambda_q rows[q][i] for every i, sum_q lambda_q <= 1: the mixture of
// rows whose least entry is largest (its duals: the distribution over entries it weighs least).
void mixture_master(const std::vector<std::vector<double>>& rows, detail::LinearProgram& master) {
  const int k = static_cast<int>(rows.size()), n = static_cast<int>(rows.front().size());
  master.rows = n + 1;
  master.cols = k + 1;
  master.a.assign(static_cast<size_t>(master.rows) * master.cols, 0.0);
  master.b.assign(static_cast<size_t>(master.rows), 0.0);
  master.c.assign(static_cast<size_t>(master.cols), 0.0);
  master.c[k] = 1;
  for (int i = 0; i < n; ++i) {
    for (int q = 0; q < k; ++q) master.a[static_cast<size_t>(i) * master.cols + q] = -rows[q][i];
    master.a[static_cast<size_t>(i) * master.cols + k] = 1;
  }
  for (int q = 0; q < k; ++q) master.a[static_cast<size_t>(n) * master.cols + q] = 1;
  master.b[n] = 1;
}

// The least entry of the mixture's sum.
double least_of_mixture(const std::vector<std::vector<double>>& rows, const std::vector<double>& lambda) {
  double least = kUnlimited;
  for (size_t i = 0; i < rows.front().size(); ++i) {
    double sum = 0;
    for (size_t q = 0; q < rows.size(); ++q) sum += lambda[q] * rows[q][i];
    least = std::min(least, sum);
  }
  return least;
}

// What every layer is at least, under one option: the lightest of the layer kinds in each respect.
struct LeastLayer {
  double time_s = kUnlimited;
  double static_bytes = kUnlimited, activation_bytes = kUnlimited, step_bytes = kUnlimited;
};

LeastLayer least_layer(const ScreeningCosts& costs, int option) {
  LeastLayer least;
  for (const UnitPrice& kind : costs.layer_kinds) {
    const UnitOptionCost& mode = kind.modes[option];
    least.time_s = std::min(least.time_s, mode.forward_s + mode.backward_s);
    least.static_bytes = std::min(least.static_bytes, static_cast<double>(kind.static_bytes));
    least.activation_bytes = std::min(least.activation_bytes, static_cast<double>(mode.activation_bytes));
    least.step_bytes = std::min(least.step_bytes, static_cast<double>(kind.step_bytes));
  }
  return least;
}

}  // namespace

std::vector<double> least_activation_multiples(const PipelineShape& shape) {
  std::vector<double> beta;
  detail::DenseLp lp;
  detail::LinearProgram master;
  std::vector<std::vector<double>> rows;
  for (const std::vector<ChunkMix>& mixes : shape.mixes) {
    // The single mix whose least-held chunk is held most, then the best mixture of mixes.
    double best = 0;
    rows.clear();
    for (const ChunkMix& mix : mixes) {
      if (mix.empty()) continue;
      best = std::max(best, static_cast<double>(*std::min_element(mix.begin(), mix.end())));
      rows.emplace_back(mix.begin(), mix.end());
    }
    if (!rows.empty()) {
      mixture_master(rows, master);
      const detail::LpSolution solution = lp.solve(master);
      if (solution.optimal) {
        std::vector<double> lambda(solution.y.begin(), solution.y.begin() + static_cast<long>(rows.size()));
        detail::keep_a_combination(lambda);
        best = std::max(best, least_of_mixture(rows, lambda));
      }
    }
    beta.push_back(best);
  }
  return beta;
}

ChunkPathWeights layout_path_weights(const detail::ScheduleDag& dag, int rounds) {
  const int p = dag.spec().stages, chunks = dag.model_chunks();
  // Layers of one cost, one per chunk in all: a forward of 1, a backward of 2. The p2p is a token,
  // so that the paths count their hops without their route depending on it.
  constexpr double kForward = 1, kBackward = 2, kHop = 1e-6;
  const std::vector<double> hop(static_cast<size_t>(chunks - 1), kHop);
  std::vector<double> forward(static_cast<size_t>(chunks)), backward(static_cast<size_t>(chunks)), scratch;
  std::vector<detail::ScheduleDag::PathCounts> paths;
  std::vector<std::vector<double>> rows;  // per path, its weight on each chunk
  detail::ScheduleDag::PathCounts counts;
  const auto add_path = [&](const std::vector<double>& layers) {
    for (int g = 0; g < chunks; ++g) {
      forward[g] = kForward * layers[g];
      backward[g] = kBackward * layers[g];
    }
    dag.critical_path(forward, backward, hop, hop, scratch, counts);
    for (const auto& known : paths) {
      if (known.forward_ops == counts.forward_ops && known.backward_ops == counts.backward_ops) return false;
    }
    std::vector<double> row(static_cast<size_t>(chunks));
    for (int g = 0; g < chunks; ++g)
      row[g] = kForward * counts.forward_ops[g] + kBackward * counts.backward_ops[g];
    rows.push_back(std::move(row));
    paths.push_back(counts);
    return true;
  };
  // Seeds: the uniform layout's path, and for each stage the path of a layout whose layers are all
  // on that stage's chunks (it runs through that stage): together they weigh every chunk.
  std::vector<double> layers(static_cast<size_t>(chunks), 1.0);
  add_path(layers);
  for (int s = 0; s < p; ++s) {
    std::fill(layers.begin(), layers.end(), 1e-3);
    for (int g = s; g < chunks; g += p) layers[g] = static_cast<double>(p);
    add_path(layers);
  }
  std::vector<double> best(paths.size(), 1.0 / static_cast<double>(paths.size()));  // the seeds' average
  double best_least = least_of_mixture(rows, best);
  detail::DenseLp lp;
  detail::LinearProgram master;
  for (int round = 0; round < rounds; ++round) {
    mixture_master(rows, master);
    const detail::LpSolution solution = lp.solve(master);
    if (!solution.optimal) break;
    std::vector<double> lambda(solution.y.begin(), solution.y.begin() + static_cast<long>(rows.size()));
    detail::keep_a_combination(lambda);
    if (const double least = least_of_mixture(rows, lambda); least > best_least) {
      best_least = least;
      best = lambda;
    }
    // The master's duals are the layout (a distribution over chunks) the mixture weighs least;
    // that layout's own critical path is the cut it lacks.
    double dual_sum = 0;
    for (int g = 0; g < chunks; ++g) dual_sum += std::max(solution.dual[g], 0.0);
    if (dual_sum <= 0) break;
    for (int g = 0; g < chunks; ++g) layers[g] = chunks * std::max(solution.dual[g], 0.0) / dual_sum;
    if (!add_path(layers)) break;  // known already: no mixture of these paths does better
  }
  ChunkPathWeights weights{std::vector<double>(static_cast<size_t>(chunks), 0.0),
                           std::vector<double>(static_cast<size_t>(chunks), 0.0), 0};
  for (size_t q = 0; q < best.size(); ++q) {
    for (int g = 0; g < chunks; ++g) {
      weights.forward[g] += best[q] * paths[q].forward_ops[g];
      weights.backward[g] += best[q] * paths[q].backward_ops[g];
    }
    weights.hops += best[q] * (paths[q].forward_hops + paths[q].backward_hops);
  }
  return weights;
}

Expected<LayoutBounds> LayoutBounds::make(const PipelineShape& shape) {
  ScheduleSpec spec{shape.kind, shape.stages, shape.micro_batches, shape.virtual_chunks};
  spec.p2p_blocks = shape.p2p_blocks;
  auto dag = detail::ScheduleDag::build(spec);
  if (!dag.ok()) return dag.error();
  return LayoutBounds(shape, std::move(*dag));
}

double LayoutBounds::uniform_pipeline_s(const ScreeningCosts& costs, int option) const {
  forward_s_.assign(static_cast<size_t>(chunks_), 0.0);
  backward_s_.assign(static_cast<size_t>(chunks_), 0.0);
  int64_t first_layer = 0;
  for (int g = 0; g < chunks_; ++g) {
    const int64_t end_layer = first_layer + uniform_layout_[g];
    // Units: 0 the embedding, 1..L the layers, L + 1 the output layer.
    const StageSums chunk =
        sum_units(costs, layers_, g == 0 ? 0 : static_cast<int>(1 + first_layer),
                  g == chunks_ - 1 ? static_cast<int>(layers_ + 2) : static_cast<int>(1 + end_layer));
    forward_s_[g] = chunk.forward_s[option];
    backward_s_[g] = chunk.backward_s[option];
    first_layer = end_layer;
  }
  p2p_s_.assign(static_cast<size_t>(chunks_ - 1), costs.p2p_s);
  return dag_.iteration_time(forward_s_, backward_s_, p2p_s_, p2p_s_, scratch_);
}

double LayoutBounds::tail_s(const ScreeningCosts& costs, const StageSums& total, int option) const {
  // The slowest stage's exposed sync and optimizer step, at least the average stage's: the exposed
  // part of a sync is the larger of two linear functions of the stage's sync and backward, so
  // convex, and the average of a convex function over the stages is at least its value at the
  // average stage (which a layout cannot change: every unit is on one stage).
  // The sync hides behind a stage's last backward, a v-th of its backward: the average stage's is
  // the total over the chunks.
  const double p = stages_;
  const double last_backward_s = total.backward_s[option] / chunks_;
  return exposed_sync_s(total.dp_sync_s / p, last_backward_s, costs.sync_overlaps_backward,
                        costs.sync_overlap_slowdown) +
         total.optimizer_s / p + costs.step_fixed_s;
}

double LayoutBounds::pipeline_bound_s(const ScreeningCosts& costs, int option) const {
  const double limit_s = (1 + costs.time_slack) * uniform_pipeline_s(costs, option) * kLimitSlack;
  const LeastLayer layer = least_layer(costs, option);
  const double m = micro_batches_;
  room_layers_.assign(static_cast<size_t>(stages_), 0.0);
  fixed_s_.assign(static_cast<size_t>(stages_), 0.0);
  double total_layers = 0;
  for (int s = 0; s < stages_; ++s) {
    // What the stage holds whatever the layout: the embedding on the first, the output layer on
    // the last.
    StageSums fixed;
    if (s == 0) fixed.add(costs.embedding, 1);
    if (s == stages_ - 1) fixed.add(costs.head, 1);
    fixed_s_[s] = fixed.time_s(option);
    const double beta = beta_[s];
    const double free_bytes =
        static_cast<double>(costs.capacity_bytes - costs.extra_bytes - fixed.static_bytes);
    const double held_room = free_bytes - beta * static_cast<double>(fixed.activation_bytes[option]);
    const double step_room = free_bytes - static_cast<double>(fixed.step_bytes);
    const double time_room = limit_s / m - fixed_s_[s];
    if (held_room < 0 || step_room < 0 || time_room < 0) return kUnlimited;
    const auto most = [](double room_left, double per_layer) {
      return per_layer > 0 ? room_left / per_layer : kUnlimited;
    };
    const double layers =
        std::min({most(held_room, layer.static_bytes + beta * layer.activation_bytes),
                  most(step_room, layer.static_bytes + layer.step_bytes), most(time_room, layer.time_s)});
    // Whole layers: a stage's count is an integer in every layout.
    room_layers_[s] = std::floor(std::min(layers, static_cast<double>(layers_)) * kLimitSlack);
    total_layers += room_layers_[s];
  }
  if (total_layers < static_cast<double>(layers_)) return kUnlimited;

  // Water-filling: the least level whose stages, each filled up to it within its room, hold every
  // layer. The bisection keeps a level below it.
  const auto held_below = [&](double level) {
    double held = 0;
    for (int s = 0; s < stages_; ++s)
      held += std::clamp((level - fixed_s_[s]) / layer.time_s, 0.0, room_layers_[s]);
    return held;
  };
  double low = *std::max_element(fixed_s_.begin(), fixed_s_.end()), high = low;
  if (layer.time_s > 0) {
    for (int s = 0; s < stages_; ++s) high = std::max(high, fixed_s_[s] + room_layers_[s] * layer.time_s);
    for (int i = 0; i < 100 && high - low > 1e-12 * high; ++i) {
      const double mid = 0.5 * (low + high);
      (held_below(mid) >= static_cast<double>(layers_) ? high : low) = mid;
    }
  }
  return m * low;
}

LayoutScreen LayoutBounds::screen(const ScreeningCosts& costs, int allowed) const {
  LayoutScreen out;
  const StageSums total = sum_units(costs, layers_, 0, static_cast<int>(layers_) + 2);
  double least = kUnlimited;
  for (int r = 0; r < kRecomputeOptions; ++r) {
    if (!option_allowed(allowed, r)) continue;
    const double water_filled_s = pipeline_bound_s(costs, r);
    if (water_filled_s == kUnlimited) continue;
    const auto unit_s = [r](const UnitPrice& u) { return u.modes[r].forward_s + u.modes[r].backward_s; };
    double slowest_unit_s = std::max(unit_s(costs.embedding), unit_s(costs.head));
    for (const UnitPrice& kind : costs.layer_kinds) slowest_unit_s = std::max(slowest_unit_s, unit_s(kind));
    // One micro-batch walks through every chunk and back; every unit runs m micro-batches on one stage.
    const double walk_s = total.time_s(r) + (chunks_ - 1) * 2 * costs.p2p_s;
    least = std::min(
        least, std::max({water_filled_s, walk_s, micro_batches_ * slowest_unit_s}) + tail_s(costs, total, r));
  }
  out.may_fit = least < kUnlimited;
  out.bound_s = least;
  return out;
}

double LayoutBounds::path_bound_s(const ScreeningCosts& costs, int allowed) {
  const LayoutScreen screened = screen(costs, allowed);
  if (!screened.may_fit) return screened.bound_s;
  if (!paths_) {
    constexpr int kRounds = 8;
    paths_ = layout_path_weights(dag_, kRounds);
  }
  const ChunkPathWeights& w = *paths_;
  const StageSums total = sum_units(costs, layers_, 0, static_cast<int>(layers_) + 2);
  const auto period = static_cast<int64_t>(costs.layer_kinds.size());
  double least = kUnlimited;
  for (int r = 0; r < kRecomputeOptions; ++r) {
    if (!option_allowed(allowed, r) || pipeline_bound_s(costs, r) == kUnlimited)
      continue;  // fills room_layers_
    const auto weighed = [&](const UnitPrice& u, int g) {
      return w.forward[g] * u.modes[r].forward_s + w.backward[g] * u.modes[r].backward_s;
    };
    double paths_s = w.hops * costs.p2p_s + weighed(costs.embedding, 0) + weighed(costs.head, chunks_ - 1);
    // Each kind alone, its layers in the lightest chunks within every stage's room: the kinds
    // share the room, so the sum of these is at most the least of the whole.
    for (int64_t kind = 0; kind < period; ++kind) {
      const UnitPrice& unit = costs.layer_kinds[static_cast<size_t>(kind)];
      stage_order_.clear();
      for (int s = 0; s < stages_; ++s) {
        double lightest = kUnlimited;
        for (int g = s; g < chunks_; g += stages_) lightest = std::min(lightest, weighed(unit, g));
        stage_order_.emplace_back(lightest, s);
      }
      std::sort(stage_order_.begin(), stage_order_.end());
      double left = static_cast<double>(layers_of_kind_below(layers_, kind, period));
      for (const auto& [weight, s] : stage_order_) {
        const double placed = std::min(left, room_layers_[s]);
        paths_s += placed * weight;
        left -= placed;
      }
    }
    least = std::min(least, paths_s + tail_s(costs, total, r));
  }
  return std::max(screened.bound_s, least);
}

}  // namespace pipescope::planner::search_detail
