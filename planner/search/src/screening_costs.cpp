#include "screening_costs.h"

#include <algorithm>

namespace pipescope::planner::search_detail {
namespace {

UnitPrice price_of(const UnitCost& unit, const PartitionUnit& scaled) {
  UnitPrice p;
  p.static_bytes = scaled.static_bytes;
  p.step_bytes = scaled.step_bytes;
  for (size_t i = 0; i < p.modes.size(); ++i) p.modes[i] = scaled.options[i];
  p.dp_sync_s = unit.dp_sync_s;
  p.optimizer_s = unit.optimizer_s;
  return p;
}

}  // namespace

int64_t layer_period(const models::ModelDesc& model) {
  if (!model.is_moe()) return 1;
  return std::clamp<int64_t>(model.moe.layer_frequency, 1, std::max<int64_t>(1, model.num_layers));
}

models::ModelDesc reduced_model(const models::ModelDesc& model) {
  models::ModelDesc reduced = model;
  reduced.num_layers = std::min(model.num_layers, layer_period(model));
  return reduced;
}

Expected<ScreeningCosts> screening_costs(const PlanInputs& inputs) {
  auto costs = build_cost_model(inputs);
  if (!costs.ok()) return costs.error();
  const PartitionProblem problem = partition_problem(inputs, *costs);
  const size_t n = costs->units.size();
  ScreeningCosts out;
  out.embedding = price_of(costs->units.front(), problem.units.front());
  out.head = price_of(costs->units.back(), problem.units.back());
  for (size_t u = 1; u + 1 < n; ++u) out.layer_kinds.push_back(price_of(costs->units[u], problem.units[u]));
  out.extra_bytes = costs->fixed_bytes;
  out.capacity_bytes = costs->capacity_bytes;
  out.step_fixed_s = costs->step_fixed_s;
  out.sync_overlaps_backward = costs->sync_overlaps_backward;
  out.sync_overlap_slowdown = costs->sync_overlap_slowdown;
  out.p2p_s = costs->p2p_s;
  out.time_slack = problem.time_slack;
  return out;
}

}  // namespace pipescope::planner::search_detail
