#include "pipescope/planner/plan.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <tuple>

#include "pipescope/models/flop_count.h"
#include "pipescope/planner/interleaved_layout.h"
#include "pipescope/planner/partition_optimizer.h"

namespace pipescope::planner {
namespace {

// Totals from the stages: the iteration adds the slowest stage's exposed gradient sync and
// optimizer step to the simulated pipeline; throughput and MFU follow from it.
void finalize(const PlanInputs& in, PlanReport& r) {
  const ParallelConfig& c = in.config;
  double tail_s = 0;
  r.peak_memory_bytes = r.reserved_bytes = 0;
  for (const StageReport& st : r.stages) {
    tail_s = std::max(tail_s, st.dp_sync_exposed_s + st.optimizer_s);
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, st.peak_memory_bytes);
    r.reserved_bytes = std::max(r.reserved_bytes, st.reserved_bytes);
  }
  r.iteration_s = r.pipeline_s + tail_s;
  r.fits = std::none_of(r.stages.begin(), r.stages.end(), [](const StageReport& s) { return s.overflows; });
  const models::RecomputeMode executed = c.recompute == RecomputeChoice::kFull ? models::RecomputeMode::kFull
                                         : c.recompute == RecomputeChoice::kNone
                                             ? models::RecomputeMode::kNone
                                             : models::RecomputeMode::kSelective;
  const Throughput t =
      throughput_of(models::iteration_flops(in.model, c.global_batch, c.seq_length, executed), c,
                    in.cluster.gpu, r.iteration_s);
  r.tokens_per_s = t.tokens_per_s;
  r.tflops_per_gpu = t.tflops_per_gpu;
  r.hardware_tflops_per_gpu = t.hardware_tflops_per_gpu;
  r.mfu = t.mfu;
  r.mfu_causal = t.mfu_causal;
}

void set_memory(const CostModel& costs, StageReport& st) {
  const StageMemory m =
      stage_memory(costs, st.static_bytes, st.activation_bytes + st.transient_bytes, st.step_bytes);
  st.allocated_bytes = m.allocated_bytes;
  st.peak_memory_bytes = m.peak_memory_bytes;
  st.reserved_bytes = m.reserved_bytes;
  st.overflows = st.peak_memory_bytes > costs.capacity_bytes;
}

// What a stage's report takes from its units' totals (activations in flight and time aside).
void set_totals(const CostModel& costs, const StageUnitTotals& totals, StageReport& st) {
  st.layers = totals.layers;
  st.has_embedding = totals.has_embedding;
  st.has_head = totals.has_head;
  st.full_recompute_layers = totals.full_recompute_layers;
  st.parameters = totals.parameters;
  st.static_bytes = totals.static_bytes;
  st.step_bytes = totals.step_bytes;
  st.transient_bytes = totals.transient_bytes;
  st.work = totals.work;
  st.optimizer_s = costs.step_fixed_s + totals.optimizer_s;
}

// Stage boundaries and options -> the user-facing report, with both memory figures.
PlanReport report_of(const PlanInputs& in, const CostModel& costs, const PartitionPlan& plan) {
  const ParallelConfig& c = in.config;
  PlanReport r;
  r.pipeline_s = plan.iteration_s;
  r.bubble_fraction = plan.bubble_fraction;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan& sp = plan.stages[s];
    StageReport st;
    st.index = static_cast<int>(s);
    st.first_unit = sp.first_unit;
    st.end_unit = sp.end_unit;
    st.in_flight = sp.activations_in_flight;
    st.recompute = recompute_option_name(sp.option);
    st.forward_s = sp.forward_s;
    st.backward_s = sp.backward_s;
    const StageUnitTotals totals = stage_unit_totals(costs, sp);
    set_totals(costs, totals, st);
    st.activation_bytes = totals.activation_bytes * st.in_flight;
    set_memory(costs, st);
    // The recipe's gradient sync overlaps the last micro-batch's backward, or follows it.
    st.dp_sync_exposed_s = exposed_sync_s(totals.dp_sync_s, sp.backward_s, costs.sync_overlaps_backward,
                                          costs.sync_overlap_slowdown);
    st.idle_s = std::max(
        0.0, plan.iteration_s - static_cast<double>(c.micro_batches()) * (sp.forward_s + sp.backward_s));
    r.stages.push_back(st);
  }
  finalize(in, r);
  return r;
}

ScheduleSpec interleaved_spec(const ParallelConfig& c) {
  return {ScheduleKind::kInterleaved, static_cast<int>(c.pp),        static_cast<int>(c.micro_batches()),
          static_cast<int>(c.vpp),    static_cast<int>(c.vpp_group), pipeline_p2p_blocks(c)};
}

// The interleaved schedule on one layout (decoder layers per chunk), simulated exactly on the
// evaluator's graph; stage s holds chunks s, s + p, ... and in_flight counts chunk activations. A stage's
// activation memory is its fullest mix of chunks (in_flight_mixes()): the last stage's final chunk, with the
// logits, is in flight far fewer times than its others.
Expected<PlanReport> interleaved_report(const PlanInputs& in, const CostModel& costs, int option,
                                        const std::vector<int64_t>& chunk_layers,
                                        const LayoutEvaluator& schedule) {
  const ParallelConfig& c = in.config;
  const int p = static_cast<int>(c.pp), v = static_cast<int>(c.vpp), chunks = p * v;
  // Chunk k of stage s is the model's chunk k p + s.
  const auto chunk_at = [p](int k, int s) {
    return static_cast<size_t>(k) * static_cast<size_t>(p) + static_cast<size_t>(s);
  };
  PipelineCosts pc;
  pc.forward_s.assign(static_cast<size_t>(chunks), 0.0);
  pc.backward_s.assign(static_cast<size_t>(chunks), 0.0);
  std::vector<std::vector<int>> chunk_units(static_cast<size_t>(chunks));
  for_each_chunk_unit(chunk_layers, static_cast<int>(costs.units.size()), [&](int g, int u) {
    const auto chunk = static_cast<size_t>(g);
    chunk_units[chunk].push_back(u);
    pc.forward_s[chunk] += costs.units[static_cast<size_t>(u)].by_mode[static_cast<size_t>(option)].forward_s;
    pc.backward_s[chunk] +=
        costs.units[static_cast<size_t>(u)].by_mode[static_cast<size_t>(option)].backward_s;
  });
  pc.p2p_forward_s.assign(static_cast<size_t>(chunks - 1), costs.p2p_s);
  pc.p2p_backward_s.assign(static_cast<size_t>(chunks - 1), costs.p2p_s);
  auto result = simulate_schedule(schedule.dag(), pc);
  if (!result.ok()) return result.error();
  const std::vector<std::vector<ChunkMix>>& mixes = schedule.mixes();
  const std::vector<int> in_flight = in_flight_counts(mixes);

  PartitionPlan plan;
  plan.iteration_s = result->iteration_s;
  plan.bubble_fraction = result->bubble_fraction;
  for (int s = 0; s < p; ++s) {
    StagePlan st;
    st.option = option;
    double f = 0, b = 0;
    for (int k = 0; k < v; ++k) {
      f += pc.forward_s[chunk_at(k, s)];
      b += pc.backward_s[chunk_at(k, s)];
    }
    st.forward_s = f;
    st.backward_s = b;
    // The span from the stage's first unit to its last; report_of's sums over it are replaced below.
    st.first_unit = static_cast<int>(costs.units.size());
    for (int k = 0; k < v; ++k) {
      for (int u : chunk_units[chunk_at(k, s)]) {
        st.first_unit = std::min(st.first_unit, u);
        st.end_unit = std::max(st.end_unit, u + 1);
      }
    }
    st.first_unit = std::min(st.first_unit, st.end_unit);
    plan.stages.push_back(st);
  }
  PlanReport r = report_of(in, costs, plan);
  // report_of summed contiguous units; a stage's units are its v chunks, so recount them.
  for (int s = 0; s < p; ++s) {
    StageReport& st = r.stages[static_cast<size_t>(s)];
    StageUnitTotals totals;
    std::vector<int64_t> chunk_activation;
    st.chunk_layers.clear();
    for (int k = 0; k < v; ++k) {
      StageUnitTotals chunk;
      for (int u : chunk_units[chunk_at(k, s)]) chunk.add_unit(costs, u, option);
      chunk_activation.push_back(chunk.activation_bytes);
      st.chunk_layers.push_back(chunk.layers);
      totals += chunk;
    }
    set_totals(costs, totals, st);
    st.in_flight = in_flight[static_cast<size_t>(s)];
    st.activation_bytes = peak_activation_bytes(mixes[static_cast<size_t>(s)], chunk_activation);
    set_memory(costs, st);
    st.dp_sync_exposed_s = exposed_sync_s(totals.dp_sync_s, st.backward_s / v, costs.sync_overlaps_backward,
                                          costs.sync_overlap_slowdown);
  }
  finalize(in, r);
  return r;
}

}  // namespace

Throughput throughput_of(const models::IterationFlops& flops, const ParallelConfig& config, const Gpu& gpu,
                         double iteration_s) {
  Throughput t;
  if (iteration_s <= 0) return t;
  const double gpus = static_cast<double>(config.gpus);
  const double peak = gpu.peak_dense_bf16_flops_per_s;
  t.tokens_per_s =
      static_cast<double>(config.global_batch) * static_cast<double>(config.seq_length) / iteration_s;
  t.tflops_per_gpu = flops.model / iteration_s / gpus / 1e12;
  t.hardware_tflops_per_gpu = flops.hardware / iteration_s / gpus / 1e12;
  t.mfu = flops.model / iteration_s / gpus / peak;
  t.mfu_causal = flops.model_causal() / iteration_s / gpus / peak;
  return t;
}

std::vector<int64_t> model_order_chunks(const PlanReport& plan, int chunks_per_stage) {
  std::vector<int64_t> chunks;
  const size_t p = plan.stages.size(), v = static_cast<size_t>(std::max(chunks_per_stage, 1));
  for (size_t g = 0; g < p * v; ++g) {
    const StageReport& st = plan.stages[g % p];
    const size_t k = g / p;
    chunks.push_back(k < st.chunk_layers.size() ? st.chunk_layers[k] : st.layers / static_cast<int>(v));
  }
  return chunks;
}

StageStepWork busiest_stage_work(const PlanReport& report, int64_t micro_batches) {
  StageStepWork busiest;
  bool first = true;
  for (const StageReport& st : report.stages) {
    StageStepWork w;
    w.stage = st.index;
    for (size_t k = 0; k < kWorkKinds; ++k)
      w.pipeline.s[k] = static_cast<double>(micro_batches) * (st.work.forward.s[k] + st.work.backward.s[k]);
    w.optimizer_s = st.optimizer_s;
    w.dp_sync_exposed_s = st.dp_sync_exposed_s;
    if (first || w.total_s() > busiest.total_s()) busiest = w;
    first = false;
  }
  return busiest;
}

namespace {

// A fixed mode's index in the cost model's options (kRecomputeModes order).
int option_of(RecomputeChoice mode) {
  switch (mode) {
    case RecomputeChoice::kNone: return 0;
    case RecomputeChoice::kFull: return 2;
    case RecomputeChoice::kSelective:
    case RecomputeChoice::kAuto: break;
  }
  return 1;
}

// The interleaved schedule under one recompute option: the baseline layout (the user's, or
// Megatron-LM's uniform chunks) and the layout with the least peak memory within the time limit
// (interleaved_layout.h): --balance memory allows 2 % over the faster of the baseline and the
// balanced layout, headroom also the baseline's own time, time none.
struct InterleavedPlan {
  PlanReport baseline, suggested;
  LayoutSearch search;
};

Expected<InterleavedPlan> interleaved_plan(const PlanInputs& in, const CostModel& costs, int option,
                                           double time_slack) {
  const ParallelConfig& c = in.config;
  const int chunks = static_cast<int>(c.pp * c.vpp);
  const std::vector<int64_t> balanced = balanced_layout(in.model.num_layers, chunks);
  const std::vector<int64_t> baseline = c.chunk_layers.empty() ? balanced : c.chunk_layers;
  auto evaluator = LayoutEvaluator::make(costs, interleaved_spec(c), option);
  if (!evaluator.ok()) return evaluator.error();
  auto balanced_s = evaluator->pipeline_s(balanced);
  if (!balanced_s.ok()) return balanced_s.error();
  auto baseline_s = evaluator->pipeline_s(baseline);
  if (!baseline_s.ok()) return baseline_s.error();
  const bool time = c.balance == BalanceGoal::kTime;
  double limit = std::min(*balanced_s, *baseline_s) * (time ? 1.0 : 1 + time_slack);
  if (c.balance == BalanceGoal::kHeadroom) limit = std::max(limit, *baseline_s);
  const std::vector<int64_t>& start = *baseline_s <= limit ? baseline : balanced;
  auto found = search_layout(*evaluator, start, limit);
  if (!found.ok()) return found.error();
  InterleavedPlan plan;
  auto baseline_report = interleaved_report(in, costs, option, baseline, *evaluator);
  if (!baseline_report.ok()) return baseline_report.error();
  auto suggested_report = interleaved_report(in, costs, option, found->chunk_layers, *evaluator);
  if (!suggested_report.ok()) return suggested_report.error();
  plan.baseline = std::move(*baseline_report);
  plan.suggested = std::move(*suggested_report);
  plan.search = {found->time_limit_s, found->exhaustive, found->lower_bound_bytes};
  return plan;
}

// The interleaved schedule takes one recompute mode on every stage, as the frameworks do (per-stage
// choices need the partition optimizer, which does not take this schedule); under --recompute auto
// the fastest mode whose suggested layout fits, or the one with the least peak when none does.
Expected<InterleavedPlan> interleaved_choice(const PlanInputs& in, const CostModel& costs, double time_slack,
                                             RecomputeChoice& chosen) {
  if (in.config.recompute != RecomputeChoice::kAuto) {
    chosen = in.config.recompute;
    return interleaved_plan(in, costs, option_of(in.config.recompute), time_slack);
  }
  std::optional<InterleavedPlan> best;
  for (RecomputeChoice mode : {RecomputeChoice::kNone, RecomputeChoice::kSelective, RecomputeChoice::kFull}) {
    auto plan = interleaved_plan(in, costs, option_of(mode), time_slack);
    if (!plan.ok()) return plan.error();
    const PlanReport &r = plan->suggested, *b = best ? &best->suggested : nullptr;
    const bool better = !b || (r.fits && !b->fits) ||
                        (r.fits == b->fits && (r.fits ? r.iteration_s < b->iteration_s
                                                      : r.peak_memory_bytes < b->peak_memory_bytes));
    if (better) {
      best = std::move(*plan);
      chosen = mode;
    }
  }
  return *std::move(best);
}

// The user's split as unit boundaries: unit 0 (the embedding) on the first stage, the head on
// the last.
std::vector<int> given_split(const ParallelConfig& c) {
  std::vector<int> boundaries{0};
  int next = 1;
  for (size_t s = 0; s < c.stage_layers.size(); ++s) {
    next += static_cast<int>(c.stage_layers[s]);
    const bool last = s + 1 == c.stage_layers.size();
    boundaries.push_back(last ? next + 1 : next);
  }
  return boundaries;
}

Expected<PlanOutcome> plan_once(const PlanInputs& in) {
  auto costs = build_cost_model(in);
  if (!costs.ok()) return costs.error();
  PlanOutcome outcome;
  outcome.config = in.config;
  outcome.capacity_bytes = costs->capacity_bytes;
  outcome.cuda_context_bytes = costs->cuda_context_bytes;
  outcome.nccl_buffer_bytes = costs->nccl_buffer_bytes;
  outcome.allocator_reserve_fraction = costs->reserve_fraction;
  outcome.notes = costs->notes;
  const PartitionProblem problem = partition_problem(in, *costs);
  if (in.config.schedule == ScheduleKind::kInterleaved) {
    RecomputeChoice chosen = in.config.recompute;
    auto plan = interleaved_choice(in, *costs, problem.time_slack, chosen);
    if (!plan.ok()) return plan.error();
    if (in.config.recompute == RecomputeChoice::kAuto) outcome.interleaved_recompute = chosen;
    outcome.uniform = std::move(plan->baseline);
    outcome.suggested = std::move(plan->suggested);
    outcome.baseline_is_given_split = !in.config.chunk_layers.empty();
    outcome.layout_search = plan->search;
    outcome.suggested_is_optimal = plan->search.exhaustive;
    const auto peak = static_cast<double>(outcome.suggested.peak_memory_bytes);
    outcome.optimality_gap =
        plan->search.exhaustive ? 0.0 : (peak - static_cast<double>(plan->search.lower_bound_bytes)) / peak;
    return outcome;
  }
  auto result = optimize_partition(problem);
  if (!result.ok()) return result.error();
  outcome.suggested = report_of(in, *costs, result->plan);
  outcome.suggested_is_optimal = result->proven_optimal;
  outcome.optimality_gap = result->optimality_gap;
  outcome.time_limit_s = result->time_bound_s;
  outcome.time_slack = problem.time_slack;
  outcome.time_limit_proven = result->time_limit_proven;
  outcome.fastest_fitting_s = result->fastest_fitting_s;
  outcome.fastest_fitting_lower_s = result->fastest_fitting_lower_s;
  if (!in.config.stage_layers.empty()) {
    auto given = fastest_fitting_options(problem, given_split(in.config));
    if (!given.ok()) return given.error();
    outcome.uniform = report_of(in, *costs, *given);
    outcome.baseline_is_given_split = true;
  } else if (result->uniform) {
    outcome.uniform = report_of(in, *costs, *result->uniform);
  } else {
    outcome.uniform_split_has_empty_stage = true;
    outcome.uniform = outcome.suggested;
  }
  return outcome;
}

}  // namespace

Expected<RecomputePricer> uniform_recompute_pricer(const PlanInputs& in, const PlanReport& split) {
  if (in.config.schedule == ScheduleKind::kInterleaved)
    return Error{"the interleaved schedule takes one recompute mode on every stage already"};
  auto costs = build_cost_model(in);
  if (!costs.ok()) return costs.error();
  PartitionProblem problem = partition_problem(in, *costs);
  problem.allowed_options = {};  // every mode, whatever the plan's --recompute allowed
  problem.partial_option = option_of(RecomputeChoice::kFull);
  problem.partial_base = option_of(RecomputeChoice::kNone);
  if (split.stages.size() != static_cast<size_t>(problem.stages))
    return Error{"the split has another stage count"};
  // Built once, shared by every setting priced.
  auto shared = std::make_shared<const std::tuple<PlanInputs, CostModel, PartitionProblem, PlanReport>>(
      in, std::move(*costs), std::move(problem), split);
  return RecomputePricer([shared](const UniformRecompute& setting) -> Expected<PlanReport> {
    const auto& [inputs, model, partition, stages] = *shared;
    PlanChoice choice;
    choice.boundaries.push_back(0);
    for (const StageReport& st : stages.stages) {
      choice.boundaries.push_back(st.end_unit);
      choice.options.push_back(option_of(setting.mode));
      int partial = 0;
      if (setting.mode == RecomputeChoice::kFull && setting.block_layers > 0 &&
          setting.block_layers < st.layers) {
        // The stage's first units up to and including its block_layers-th decoder layer.
        int layers = 0;
        for (int u = st.first_unit; u < st.end_unit && layers < setting.block_layers; ++u) {
          layers += model.units[static_cast<size_t>(u)].is_layer ? 1 : 0;
          partial = u - st.first_unit + 1;
        }
      }
      choice.partial_units.push_back(partial);
    }
    auto plan = evaluate_plan(partition, choice);
    if (!plan.ok()) return plan.error();
    return report_of(inputs, model, *plan);
  });
}

namespace {

// Changes that could make a plan fit, each planned for real so the user sees whether it does.
std::vector<FitSuggestion> fit_suggestions(const PlanInputs& in) {
  std::vector<ParallelConfig> candidates;
  const ParallelConfig& c = in.config;
  auto with = [&](auto edit) {
    ParallelConfig next = c;
    edit(next);
    candidates.push_back(next);
  };
  if (c.recompute != RecomputeChoice::kAuto && c.schedule != ScheduleKind::kInterleaved) {
    with([](ParallelConfig& n) { n.recompute = RecomputeChoice::kAuto; });
  }
  if (c.recompute != RecomputeChoice::kFull) {
    with([](ParallelConfig& n) { n.recompute = RecomputeChoice::kFull; });
  }
  if (c.zero_stage < 3 && c.dp() > 1) {
    with([](ParallelConfig& n) { ++n.zero_stage; });
  }
  if (c.tp > 1 && !c.sequence_parallel) {
    with([](ParallelConfig& n) { n.sequence_parallel = true; });
  }
  if (c.micro_batch > 1) {
    with([](ParallelConfig& n) { n.micro_batch = 1; });
  }
  // More pipeline stages: out of the data-parallel ranks when there are two to merge, else
  // with twice the GPUs (the data-parallel size and the batch stay as they are).
  if (2 * c.pp <= in.model.num_layers && c.vpp == 1) {
    with([&c](ParallelConfig& n) {
      n.pp *= 2;
      if (c.dp() % 2 != 0) n.gpus *= 2;
    });
  }
  std::vector<FitSuggestion> out;
  for (const ParallelConfig& config : candidates) {
    PlanInputs next = in;
    // Each change gets an eighth of the plan's budget: its peak and time are what the table
    // shows, and a split within a few percent of the optimum answers "does it fit".
    next.search_work = std::max<int64_t>(in.search_work / 8, 1);
    auto resolved = resolve_config(in.model, config);
    if (!resolved.ok()) continue;
    next.config = *resolved;
    auto plan = plan_once(next);
    if (!plan.ok()) continue;
    out.push_back(
        {config, plan->suggested.fits, plan->suggested.peak_memory_bytes, plan->suggested.iteration_s});
  }
  return out;
}

}  // namespace

Expected<PlanOutcome> make_plan(const PlanInputs& inputs) {
  auto outcome = plan_once(inputs);
  if (!outcome.ok()) return outcome;
  if (!outcome->suggested.fits) outcome->suggestions = fit_suggestions(inputs);
  return outcome;
}

}  // namespace pipescope::planner
