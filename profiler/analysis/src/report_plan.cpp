// Planned versus measured: the plan (`pipescope plan --json`) beside what the traces show, per
// stage, comparing like with like (the plan's reserved figure with a reserved trace, its allocated
// figure with an allocated one). Planner and analysis meet in JSON only, never by linking.
#include <nlohmann/json.hpp>

#include "report_context.h"

namespace pipescope::analysis {
namespace {

double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

Status add_plan_comparison(const ReportContext& ctx, RunReport& report) {
  const nlohmann::json doc = nlohmann::json::parse(ctx.options.plan_json, nullptr, false);
  const std::string where = ctx.options.plan_path.empty() ? "--plan" : ctx.options.plan_path;
  if (doc.is_discarded() || !doc.is_object())
    return Error(where + " is not JSON (expected 'pipescope plan --json' output)");
  const auto side = doc.find("suggested");
  if (!doc.contains("schema_version") || side == doc.end() || !side->is_object() ||
      !side->contains("stages") || !(*side)["stages"].is_array())
    return Error(where +
                 " is not the output of 'pipescope plan --json' (no schema_version / suggested.stages)");
  PlanComparison plan;
  plan.plan_path = ctx.options.plan_path;
  plan.notes.push_back("compared with the plan's suggested split");

  std::string figure = "none";
  for (const RankReport& r : report.ranks)
    if (r.memory_figure != "none") figure = r.memory_figure;
  plan.memory_figure = figure;
  if (figure == "none") plan.notes.push_back("the traces hold no memory records: memory not compared");

  const nlohmann::json& stages = (*side)["stages"];
  if (stages.size() != report.stages.size())
    plan.notes.push_back("the plan has " + std::to_string(stages.size()) + " stages, the run " +
                         std::to_string(report.stages.size()) +
                         "; compared stage by stage as far as both go");
  for (size_t k = 0; k < stages.size() && k < report.stages.size(); ++k) {
    const nlohmann::json& s = stages[k];
    if (!s.is_object())
      return Error(where + ": suggested.stages[" + std::to_string(k) + "] is not an object");
    const StageReport& measured = report.stages[k];
    PlanStageComparison c;
    c.stage = measured.stage;
    if (figure != "none") {
      c.predicted_peak_memory_bytes =
          number(s, figure == "allocated" ? "allocated_bytes" : "peak_memory_bytes");
      c.measured_peak_memory_bytes = static_cast<double>(measured.peak_memory_bytes);
    }
    c.predicted_forward_s = number(s, "forward_s");
    c.predicted_backward_s = number(s, "backward_s");
    c.measured_forward_s = static_cast<double>(measured.forward_mean_ns.value_or(0)) * 1e-9;
    c.measured_backward_s = static_cast<double>(measured.backward_mean_ns.value_or(0)) * 1e-9;
    plan.stages.push_back(c);
  }
  plan.predicted_bubble_fraction = number(*side, "bubble_fraction");
  double bubble = 0;
  size_t measured_stages = 0;
  for (const StageReport& s : report.stages) {
    if (!s.bubble_fraction) continue;
    bubble += *s.bubble_fraction;
    ++measured_stages;
  }
  plan.measured_bubble_fraction = measured_stages == 0 ? 0 : bubble / static_cast<double>(measured_stages);
  plan.predicted_step_s = number(*side, "iteration_s");
  plan.measured_step_s = static_cast<double>(report.steps.median_ns) * 1e-9;
  if (report.steps.count == 0) plan.notes.push_back("no step ranges in the traces: step time not measured");
  report.plan = std::move(plan);
  return Status::Ok();
}

}  // namespace pipescope::analysis
