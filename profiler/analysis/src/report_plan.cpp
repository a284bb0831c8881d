// Planned versus measured: the plan (`pipescope plan --json`) beside what the traces show, per
// stage, comparing like with like (the plan's reserved figure with a reserved trace, its allocated
// figure with an allocated one), with the error of each figure and notes where the plan and the
// run differ in layout or micro-batches. Planner and analysis meet in JSON only, never by linking.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "pipescope/common/json_document.h"
#include "pipescope/trace/capture_kinds.h"
#include "report_context.h"

namespace pipescope::analysis {
namespace {

// The plan documents this report reads (`pipescope plan --json`'s schema_version): 2 added the
// layout string and the interleaved schedule's chunks, 3 the launch gaps by kind of work, none of
// them read here; a newer one may move or rename what is read below.
constexpr int kOldestPlanSchemaVersion = 1;
constexpr int kNewestPlanSchemaVersion = 3;

double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// A figure the comparison cannot do without: a missing one is an incomplete plan, not a 0.
Expected<double> required_number(const nlohmann::json& j, const char* key, const std::string& where,
                                 const std::string& path) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) {
    return Error(where + ": " + path + "." + key +
                 " is missing or not a number: not a complete 'pipescope plan --json' output");
  }
  return it->get<double>();
}

PlanFigure figure(double predicted, std::optional<double> measured) {
  PlanFigure f{predicted, measured, std::nullopt};
  if (measured && *measured != 0) f.error_percent = (predicted - *measured) / *measured * 100;
  return f;
}

std::optional<double> seconds(const std::optional<int64_t>& ns) {
  if (!ns) return std::nullopt;
  return static_cast<double>(*ns) * 1e-9;
}

// The plan's sizes (inputs.config) against the run's layout and micro-batches per step.
void compare_config(const nlohmann::json& doc, const RunReport& report, PlanComparison& plan) {
  const auto inputs = doc.find("inputs");
  if (inputs == doc.end() || !inputs->is_object() || !inputs->contains("config")) {
    plan.notes.emplace_back("the plan records no inputs.config: its layout is not compared");
    return;
  }
  const nlohmann::json& config = (*inputs)["config"];
  const LayoutReport& layout = report.layout;
  if (layout.source == "inferred" || layout.source == "stated") {
    for (const auto& [key, run] : {std::pair{"tp", layout.tp}, {"pp", layout.pp}, {"dp", layout.dp}}) {
      const double planned = number(config, key);
      if (planned > 0 && static_cast<int32_t>(planned) != run) {
        plan.notes.push_back(std::string("the plan is for ") + key + " " +
                             std::to_string(static_cast<int>(planned)) + ", the run has " + key + " " +
                             std::to_string(run) + ": its per-stage figures are for another split");
      }
    }
  }
  const double planned = number(config, "micro_batches");
  for (const StageReport& s : report.stages) {
    if (!s.microbatches_per_step || planned <= 0) continue;
    if (std::lround(*s.microbatches_per_step) != std::lround(planned)) {
      plan.notes.push_back("the plan has " + std::to_string(std::lround(planned)) +
                           " micro-batches a step (micro-batch size " +
                           std::to_string(static_cast<int>(number(config, "micro_batch"))) + "), the run " +
                           std::to_string(std::lround(*s.microbatches_per_step)) + " on stage " +
                           std::to_string(s.stage) + ": the micro-batch size or the global batch differ");
    }
    break;
  }
}

// The stage's GPU time a step in `categories`, the mean over its ranks; none without kernels.
std::optional<double> measured_per_step_s(const RunReport& report, int32_t stage,
                                          std::initializer_list<const char*> categories) {
  double sum_s = 0;
  int ranks = 0;
  for (const RankReport& r : report.ranks) {
    if (r.stage != stage || r.steps == 0 || r.kernel_ns_by_category.empty()) continue;
    int64_t ns = 0;
    for (const char* c : categories) {
      const auto it = r.kernel_ns_by_category.find(c);
      if (it != r.kernel_ns_by_category.end()) ns += it->second;
    }
    sum_s += static_cast<double>(ns) * 1e-9 / static_cast<double>(r.steps);
    ++ranks;
  }
  if (ranks == 0) return std::nullopt;
  return sum_s / ranks;
}

// The plan's stage time a step in `kinds` (stages[].work, forward and backward, per micro-batch),
// plus `extra` (seconds a step); none when the plan has no work split (an older plan).
std::optional<double> planned_per_step_s(const nlohmann::json& stage, double micro_batches,
                                         std::initializer_list<const char*> kinds,
                                         const char* extra = nullptr) {
  const auto work = stage.find("work");
  if (work == stage.end() || !work->is_object() || micro_batches <= 0) return std::nullopt;
  double s = 0;
  for (const char* pass : {"forward", "backward"}) {
    const auto it = work->find(pass);
    if (it == work->end() || !it->is_object()) return std::nullopt;
    for (const char* kind : kinds) s += number(*it, kind);
  }
  return s * micro_batches + (extra ? number(stage, extra) : 0.0);
}

std::string gib_text(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

// Every rank recorded NCCL (its capture kinds say so) and none opened a communicator: the run
// talked through something else (gloo, host memory) or not at all.
bool opened_no_nccl_communicator(const LoadedRun& run) {
  if (run.ranks.empty()) return false;
  for (const RankDigest& rank : run.ranks) {
    if (!rank.process || !rank.process->capture_kinds) return false;
    if ((*rank.process->capture_kinds & trace::record_bit(trace::RecordKind::kNcclComm)) == 0) return false;
    if (!rank.comms.empty() || !rank.p2p.empty()) return false;
  }
  return true;
}

}  // namespace

Status add_plan_comparison(const ReportContext& ctx, RunReport& report) {
  const std::string where = ctx.options.plan_path.empty() ? "--plan" : ctx.options.plan_path;
  const Expected<nlohmann::json> parsed = parse_json_object(ctx.options.plan_json, where);
  if (!parsed) return Error(parsed.error().message + " (expected 'pipescope plan --json' output)");
  const nlohmann::json& doc = *parsed;
  // The plan's baseline is its `uniform` object, whichever split it holds (`baseline` says).
  const bool baseline = ctx.options.plan_split == PlanSplit::kBaseline;
  const std::string key = baseline ? "uniform" : "suggested";
  const auto side = doc.find(key);
  if (!doc.contains("schema_version") || side == doc.end() || !side->is_object() ||
      !side->contains("stages") || !(*side)["stages"].is_array()) {
    return Error(where + " is not the output of 'pipescope plan --json' (no schema_version / " + key +
                 ".stages)");
  }
  const nlohmann::json& version = doc["schema_version"];
  if (!version.is_number_integer() || version.get<int64_t>() < kOldestPlanSchemaVersion ||
      version.get<int64_t>() > kNewestPlanSchemaVersion) {
    return Error(where + " has plan schema_version " + version.dump() + "; this pipescope reads versions " +
                 std::to_string(kOldestPlanSchemaVersion) + " to " +
                 std::to_string(kNewestPlanSchemaVersion) +
                 " (plan it again with this build's 'pipescope plan --json')");
  }
  auto planned_step_s = required_number(*side, "iteration_s", where, key);
  if (!planned_step_s) return planned_step_s.error();
  auto planned_bubble = required_number(*side, "bubble_fraction", where, key);
  if (!planned_bubble) return planned_bubble.error();
  PlanComparison plan;
  plan.plan_path = ctx.options.plan_path;
  plan.side = "suggested";
  std::string compared = "the plan's suggested split";
  if (baseline) {
    const auto stated = doc.find("baseline");
    const bool given = stated != doc.end() && *stated == "given_split";
    plan.side = given ? "given_split" : "uniform";
    compared = std::string("the plan's baseline (--plan-split baseline): ") +
               (given ? "the split given with 'pipescope plan --split'" : "the uniform split");
  }
  plan.notes.push_back("compared with " + compared);
  compare_config(doc, report, plan);

  std::string memory = "none";
  for (const RankReport& r : report.ranks)
    if (r.memory_figure != "none") memory = r.memory_figure;
  plan.memory_figure = memory;
  if (memory == "none") plan.notes.emplace_back("the traces hold no memory records: memory not compared");

  // A trace sees what was cudaMalloc'd, NCCL's buffers included, never the CUDA context; and a
  // run whose traces captured NCCL but show no communicator never allocated NCCL's buffers.
  double unseen_bytes = 0;
  if (memory == "reserved") {
    const auto overheads = doc.find("memory_overheads");
    if (overheads != doc.end() && overheads->is_object()) {
      const double context = number(*overheads, "cuda_context_bytes");
      const double nccl = number(*overheads, "nccl_buffer_bytes");
      if (context > 0) {
        unseen_bytes += context;
        plan.notes.push_back("planned peak memory less the plan's CUDA context (" + gib_text(context) +
                             " GiB), which traces do not see");
      }
      if (nccl > 0 && opened_no_nccl_communicator(ctx.run)) {
        unseen_bytes += nccl;
        plan.notes.push_back("planned peak memory less the plan's NCCL buffers (" + gib_text(nccl) +
                             " GiB): the traces captured NCCL and no rank opened a communicator");
      }
    }
  }

  const nlohmann::json& stages = (*side)["stages"];
  const auto inputs = doc.find("inputs");
  const double micro_batches = inputs != doc.end() && inputs->is_object() && inputs->contains("config")
                                   ? number((*inputs)["config"], "micro_batches")
                                   : 0.0;
  if (stages.size() != report.stages.size()) {
    plan.notes.push_back("the plan has " + std::to_string(stages.size()) + " stages, the run " +
                         std::to_string(report.stages.size()) +
                         "; compared stage by stage as far as both go");
  }
  for (size_t k = 0; k < stages.size() && k < report.stages.size(); ++k) {
    const nlohmann::json& s = stages[k];
    const std::string path = key + ".stages[" + std::to_string(k) + "]";
    if (!s.is_object())
      return Error(std::string(where).append(": ").append(path).append(" is not an object"));
    auto forward_s = required_number(s, "forward_s", where, path);
    if (!forward_s) return forward_s.error();
    auto backward_s = required_number(s, "backward_s", where, path);
    if (!backward_s) return backward_s.error();
    auto peak_bytes =
        required_number(s, memory == "allocated" ? "allocated_bytes" : "peak_memory_bytes", where, path);
    if (!peak_bytes) return peak_bytes.error();
    const StageReport& measured = report.stages[k];
    PlanStageComparison c;
    c.stage = measured.stage;
    c.peak_memory_bytes =
        figure(memory == "allocated" ? *peak_bytes : *peak_bytes - unseen_bytes,
               memory == "none" || !measured.peak_memory_bytes
                   ? std::nullopt
                   : std::optional<double>(static_cast<double>(*measured.peak_memory_bytes)));
    c.forward_s = figure(*forward_s, seconds(measured.forward_mean_ns));
    c.backward_s = figure(*backward_s, seconds(measured.backward_mean_ns));
    const auto by_kind = [&](std::initializer_list<const char*> kinds, const char* extra,
                             std::initializer_list<const char*> categories) -> std::optional<PlanFigure> {
      const std::optional<double> planned = planned_per_step_s(s, micro_batches, kinds, extra);
      const std::optional<double> run = measured_per_step_s(report, measured.stage, categories);
      if (!planned || !run) return std::nullopt;
      return figure(*planned, run);
    };
    c.gemm_s = by_kind({"gemm_s"}, nullptr, {"gemm"});
    c.attention_s = by_kind({"attention_s"}, nullptr, {"attention"});
    c.memory_bound_s =
        by_kind({"memory_bound_s"}, "optimizer_s", {"elementwise", "embedding", "other", "copy"});
    plan.stages.push_back(c);
  }
  double bubble = 0;
  size_t measured_stages = 0;
  for (const StageReport& s : report.stages) {
    if (!s.bubble_fraction) continue;
    bubble += *s.bubble_fraction;
    ++measured_stages;
  }
  plan.bubble_fraction =
      figure(*planned_bubble, measured_stages == 0
                                  ? std::nullopt
                                  : std::optional<double>(bubble / static_cast<double>(measured_stages)));
  // A relative error of a bubble under 1 % says nothing (one stage: 0 planned, 0.001 % measured).
  if (plan.bubble_fraction.measured && *plan.bubble_fraction.measured < 0.01)
    plan.bubble_fraction.error_percent = std::nullopt;
  plan.step_s = figure(*planned_step_s,
                       report.steps.count == 0
                           ? std::nullopt
                           : std::optional<double>(static_cast<double>(report.steps.median_ns) * 1e-9));
  if (report.steps.count == 0) plan.notes.emplace_back("no steps in the traces: step time not measured");
  report.plan = std::move(plan);
  return Status::Ok();
}

}  // namespace pipescope::analysis
