// simulate_schedule(): checks the costs, times the schedule's graph, and lays the result out per
// stage with busy, idle and live-activation figures.
#include <algorithm>
#include <cmath>
#include <string>

#include "pipescope/planner/pipeline_schedule.h"
#include "pipescope/planner/schedule_dag.h"

namespace pipescope::planner {
namespace {

Status check_times(const std::vector<double>& values, size_t expected, bool may_be_empty, const char* what) {
  if (values.empty() && may_be_empty) return Status::Ok();
  if (values.size() != expected) {
    return Error{std::string(what) + " has " + std::to_string(values.size()) + " entries, expected " +
                 std::to_string(expected) + (may_be_empty ? " (or none)" : "")};
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]) || values[i] < 0) {
      return Error{std::string(what) + "[" + std::to_string(i) + "] must be a finite time >= 0 s, got " +
                   std::to_string(values[i])};
    }
  }
  return Status::Ok();
}

}  // namespace

Expected<ScheduleResult> simulate_schedule(const ScheduleSpec& spec, const PipelineCosts& costs) {
  auto dag = detail::ScheduleDag::build(spec);
  if (!dag.ok()) return dag.error();
  return simulate_schedule(*dag, costs);
}

Expected<ScheduleResult> simulate_schedule(const detail::ScheduleDag& graph, const PipelineCosts& costs) {
  const detail::ScheduleDag* dag = &graph;
  const ScheduleSpec& spec = graph.spec();
  const size_t chunks = static_cast<size_t>(dag->model_chunks());
  for (const Status& s : {check_times(costs.forward_s, chunks, false, "forward_s"),
                          check_times(costs.backward_s, chunks, false, "backward_s"),
                          check_times(costs.p2p_forward_s, chunks - 1, true, "p2p_forward_s"),
                          check_times(costs.p2p_backward_s, chunks - 1, true, "p2p_backward_s")}) {
    if (!s.ok()) return s.error();
  }

  std::vector<double> start_s;
  std::vector<double> end_s;
  ScheduleResult result;
  result.iteration_s =
      dag->run(costs.forward_s, costs.backward_s, costs.p2p_forward_s, costs.p2p_backward_s, end_s, &start_s);
  result.stages.resize(static_cast<size_t>(spec.stages));
  for (int s = 0; s < spec.stages; ++s) result.stages[s].ops.resize(dag->order()[s].size());

  double busy_total = 0;
  for (size_t i = 0; i < dag->ops().size(); ++i) {
    const detail::DagOp& node = dag->ops()[i];
    const double duration = node.op.kind == OpKind::kForward ? costs.forward_s[node.model_chunk]
                                                             : costs.backward_s[node.model_chunk];
    StageTimeline& stage = result.stages[node.stage];
    stage.ops[node.position] = OpTiming{node.op, start_s[i], end_s[i]};
    stage.busy_s += duration;
    busy_total += duration;
  }
  for (StageTimeline& stage : result.stages) {
    stage.idle_s = result.iteration_s - stage.busy_s;
    int alive = 0;
    for (const OpTiming& t : stage.ops) {
      alive += t.op.kind == OpKind::kForward ? 1 : -1;
      stage.peak_activations = std::max(stage.peak_activations, alive);
    }
  }
  if (result.iteration_s > 0) {
    result.bubble_fraction = 1.0 - busy_total / (spec.stages * result.iteration_s);
  }
  return result;
}

}  // namespace pipescope::planner
