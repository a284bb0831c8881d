#include "exact_plan.h"

#include <algorithm>

#include "pipescope/models/flop_count.h"
#include "pipescope/planner/plan.h"

namespace pipescope::planner::search_detail {

ExactPlanner::ExactPlanner(const SearchRequest& request, int64_t seq_length)
    : inputs_{request.model, request.cluster, request.profile, {}},
      // Model FLOPs do not depend on recomputation (it changes what the GPUs execute, not the model).
      flops_(models::iteration_flops(request.model, request.global_batch, seq_length,
                                     models::RecomputeMode::kNone)) {}

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
  const Throughput t = throughput_of(flops_, r.config, inputs_.cluster.gpu, r.iteration_s);
  r.tokens_per_s = t.tokens_per_s;
  r.tflops_per_gpu = t.tflops_per_gpu;
  r.mfu = t.mfu;
  r.mfu_causal = t.mfu_causal;
}

Expected<RankedPlan> ExactPlanner::plan(const ParallelConfig& config, const std::vector<int>& boundaries,
                                        const std::vector<int>& options, bool uniform_split) {
  RankedPlan r;
  r.config = config;
  if (config.schedule == ScheduleKind::kInterleaved) {
    // The interleaved layout search is cheap enough to run for every candidate.
    inputs_.config = config;
    auto outcome = make_plan(inputs_);
    if (!outcome.ok()) return outcome.error();
    ++built_;
    // Ranked on the layout plan would suggest; Megatron-LM's uniform chunks are the baseline.
    const PlanReport& u = outcome->suggested;
    for (const StageReport& s : u.stages) {
      r.stage_layers.push_back(s.layers);
      r.stage_recompute.push_back(s.recompute);
    }
    r.iteration_s = u.iteration_s;
    r.pipeline_s = u.pipeline_s;
    r.bubble_fraction = u.bubble_fraction;
    r.peak_memory_bytes = u.peak_memory_bytes;
    r.fits = u.fits;
    r.uniform_peak_memory_bytes = outcome->uniform.peak_memory_bytes;
    r.uniform_fits = outcome->uniform.fits;
    for (size_t s = 0; s < u.stages.size(); ++s)
      r.balanced_split =
          r.balanced_split || u.stages[s].chunk_layers != outcome->uniform.stages[s].chunk_layers;
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
  for (const StagePlan& sp : plan->stages) {
    const StageUnitTotals t = stage_unit_totals(cm, sp);
    const int64_t peak =
        stage_memory(cm, t.static_bytes, t.activation_bytes * sp.activations_in_flight + t.transient_bytes,
                     t.step_bytes)
            .peak_memory_bytes;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, peak);
    r.fits = r.fits && peak <= cm.capacity_bytes;
    tail_s = std::max(tail_s, exposed_sync_s(t.dp_sync_s, sp.backward_s, cm.sync_overlaps_backward,
                                             cm.sync_overlap_slowdown) +
                                  cm.step_fixed_s + t.optimizer_s);
    r.stage_recompute.push_back(recompute_option_name(sp.option));
    r.stage_layers.push_back(t.layers);
  }
  r.pipeline_s = plan->iteration_s;
  r.bubble_fraction = plan->bubble_fraction;
  r.iteration_s = plan->iteration_s + tail_s;
  r.uniform_fits = uniform_split ? r.fits : false;
  r.balanced_split = !uniform_split;
  if (uniform_split) r.uniform_peak_memory_bytes = r.peak_memory_bytes;
  set_throughput(r);
  return r;
}

}  // namespace pipescope::planner::search_detail
