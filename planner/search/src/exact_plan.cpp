#include "exact_plan.h"

#include <algorithm>
#include <cmath>

#include "pipescope/models/flop_count.h"
#include "pipescope/planner/plan.h"

namespace pipescope::planner::search_detail {

ExactPlanner::ExactPlanner(const SearchRequest& request, int64_t seq_length)
    : inputs_{request.model, request.cluster, request.profile, {}} {
  // Model FLOPs do not depend on recomputation (it changes what the GPUs execute, not the model).
  const models::IterationFlops flops =
      models::iteration_flops(request.model, request.global_batch, seq_length, models::RecomputeMode::kNone);
  model_flops_ = flops.model;
  model_flops_causal_ = flops.model_causal();
}

Expected<const CostModel*> ExactPlanner::costs_for(const ParallelConfig& c) {
  // What build_cost_model() reads of a resolved configuration: the layout, the micro-batch and
  // the ZeRO choice. Schedule, virtual stages and recompute are not in it.
  const Key key{c.tp, c.pp, c.cp, c.ep, c.micro_batch, c.zero_stage, c.zero_shard};
  if (auto it = cache_.find(key); it != cache_.end()) return &it->second;
  inputs_.config = c;
  auto costs = build_cost_model(inputs_);
  if (!costs.ok()) return costs.error();
  ++built_;
  return &cache_.emplace(key, std::move(*costs)).first->second;
}

void ExactPlanner::set_throughput(RankedPlan& r) const {
  const ParallelConfig& c = r.config;
  if (r.iteration_s <= 0) return;
  const double gpus = static_cast<double>(c.gpus);
  r.tokens_per_s = static_cast<double>(c.global_batch) * static_cast<double>(c.seq_length) / r.iteration_s;
  r.tflops_per_gpu = model_flops_ / r.iteration_s / gpus / 1e12;
  r.mfu = model_flops_ / r.iteration_s / gpus / inputs_.cluster.gpu.peak_dense_bf16_flops_per_s;
  r.mfu_causal = model_flops_causal_ / r.iteration_s / gpus / inputs_.cluster.gpu.peak_dense_bf16_flops_per_s;
}

Expected<RankedPlan> ExactPlanner::plan(const ParallelConfig& config, const std::vector<int>& boundaries,
                                        const std::vector<int>& options, bool uniform_split) {
  RankedPlan r;
  r.config = config;
  if (config.schedule == ScheduleKind::kInterleaved) {
    // No optimizer runs for the interleaved schedule, so make_plan() is cheap here.
    inputs_.config = config;
    auto outcome = make_plan(inputs_);
    if (!outcome.ok()) return outcome.error();
    ++built_;
    const PlanReport& u = outcome->uniform;
    for (const StageReport& s : u.stages) {
      r.stage_layers.push_back(s.layers);
      r.stage_recompute.push_back(s.recompute);
    }
    r.iteration_s = u.iteration_s;
    r.pipeline_s = u.pipeline_s;
    r.bubble_fraction = u.bubble_fraction;
    r.peak_memory_bytes = r.uniform_peak_memory_bytes = u.peak_memory_bytes;
    r.fits = r.uniform_fits = u.fits;
    set_throughput(r);
    return r;
  }

  auto costs = costs_for(config);
  if (!costs.ok()) return costs.error();
  const CostModel& cm = **costs;
  inputs_.config = config;
  const PartitionProblem problem = partition_problem(inputs_, cm);
  auto plan = evaluate_plan(problem, PlanChoice{boundaries, options, {}});
  if (!plan.ok()) return plan.error();

  // The figures of make_plan()'s report (plan.cpp): both memory figures from the unscaled unit
  // costs, the gradient sync hidden behind the stage's last backward, the slowest stage's
  // exposed sync and optimizer step added to the simulated pipeline.
  double tail_s = 0;
  r.fits = true;
  for (size_t s = 0; s < plan->stages.size(); ++s) {
    const StagePlan& sp = plan->stages[s];
    int64_t static_bytes = 0, activation_bytes = 0, transient_bytes = 0, step_bytes = 0;
    double dp_sync_s = 0, optimizer_s = cm.step_fixed_s;
    int layers = 0;
    for (int u = sp.first_unit; u < sp.end_unit; ++u) {
      const UnitCost& unit = cm.units[static_cast<size_t>(u)];
      const UnitOptionCost& option = unit.by_mode[static_cast<size_t>(sp.option)];
      static_bytes += unit.static_bytes;
      step_bytes += unit.step_bytes;
      activation_bytes += option.activation_bytes;
      transient_bytes = std::max(transient_bytes, option.transient_bytes);
      dp_sync_s += unit.dp_sync_s;
      optimizer_s += unit.optimizer_s;
      layers += unit.is_layer ? 1 : 0;
    }
    const int64_t peak =
        stage_memory(cm, static_bytes, activation_bytes * sp.activations_in_flight + transient_bytes,
                     step_bytes)
            .peak_memory_bytes;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, peak);
    r.fits = r.fits && peak <= cm.capacity_bytes;
    tail_s =
        std::max(tail_s, exposed_sync_s(dp_sync_s, sp.backward_s, cm.sync_overlaps_backward) + optimizer_s);
    r.stage_recompute.push_back(recompute_option_name(sp.option));
    r.stage_layers.push_back(layers);
  }
  r.pipeline_s = plan->iteration_s;
  r.bubble_fraction = plan->bubble_fraction;
  r.iteration_s = plan->iteration_s + tail_s;
  r.uniform_fits = uniform_split ? r.fits : false;
  if (uniform_split) r.uniform_peak_memory_bytes = r.peak_memory_bytes;
  set_throughput(r);
  return r;
}

}  // namespace pipescope::planner::search_detail
