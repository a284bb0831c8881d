// Planned versus measured: the plan (`pipescope plan --json`) beside what the traces show, per
// stage, comparing like with like (the plan's reserved figure with a reserved trace, its allocated
// figure with an allocated one), with the error of each figure and notes where the plan and the
// run differ in layout or micro-batches. Planner and analysis meet in JSON only, never by linking.
#include <cmath>
#include <cstdio>
#include <string_view>
#include <tuple>

#include "pipescope/common/plan_schema.h"
#include "pipescope/trace/capture_kinds.h"
#include "report_context.h"

namespace pipescope::analysis {
namespace {

namespace schema = plan_schema;

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
void compare_config(const schema::PlanSide& side, const RunReport& report, PlanComparison& plan) {
  if (!side.config) {
    plan.notes.emplace_back("the plan records no inputs.config: its layout is not compared");
    return;
  }
  const schema::ConfigFigures& config = *side.config;
  const LayoutReport& layout = report.layout;
  if (layout.source == "inferred" || layout.source == "stated") {
    for (const auto& [key, planned, run] :
         {std::tuple{"tp", config.tp, layout.tp}, std::tuple{"pp", config.pp, layout.pp},
          std::tuple{"dp", config.dp, layout.dp}}) {
      if (planned && *planned > 0 && *planned != run) {
        plan.notes.push_back(std::string("the plan is for ") + key + " " + std::to_string(*planned) +
                             ", the run has " + key + " " + std::to_string(run) +
                             ": its per-stage figures are for another split");
      }
    }
  }
  if (!config.micro_batches || *config.micro_batches <= 0) return;
  const int64_t planned = *config.micro_batches;
  for (const StageReport& s : report.stages) {
    if (!s.microbatches_per_step) continue;
    if (std::lround(*s.microbatches_per_step) != planned) {
      plan.notes.push_back("the plan has " + std::to_string(planned) +
                           " micro-batches a step (micro-batch size " +
                           std::to_string(config.micro_batch.value_or(0)) + "), the run " +
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

// The plan's stage time a step in `kinds` (work by kind, forward and backward, per micro-batch),
// plus the optimizer step where asked; none when the plan has no work split (an early plan).
std::optional<double> planned_per_step_s(const schema::StageFigures& stage,
                                         std::optional<int64_t> micro_batches,
                                         std::initializer_list<std::string_view> kinds, bool with_optimizer) {
  if (!stage.forward_work || !stage.backward_work || !micro_batches || *micro_batches <= 0)
    return std::nullopt;
  double s = 0;
  for (std::string_view kind : kinds) s += stage.forward_work->of(kind) + stage.backward_work->of(kind);
  return s * static_cast<double>(*micro_batches) + (with_optimizer ? stage.optimizer_s : 0.0);
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
  // The plan's baseline is its `uniform` object, whichever split it holds (`baseline` says).
  const bool baseline = ctx.options.plan_split == PlanSplit::kBaseline;
  const Expected<schema::PlanSide> read = schema::read_plan_side(
      ctx.options.plan_json, where, baseline ? schema::kBaselineSide : schema::kSuggestedSide);
  if (!read) return read.error();
  const schema::PlanSide& side = *read;
  PlanComparison plan;
  plan.plan_path = ctx.options.plan_path;
  plan.side = "suggested";
  std::string compared = "the plan's suggested split";
  if (baseline) {
    const bool given = side.baseline_is_given_split;
    plan.side = given ? "given_split" : "uniform";
    compared = std::string("the plan's baseline (--plan-split baseline): ") +
               (given ? "the split given with 'pipescope plan --split'" : "the uniform split");
  }
  plan.notes.push_back("compared with " + compared);
  compare_config(side, report, plan);

  std::string memory = "none";
  for (const RankReport& r : report.ranks)
    if (r.memory_figure != "none") memory = r.memory_figure;
  plan.memory_figure = memory;
  if (memory == "none") plan.notes.emplace_back("the traces hold no memory records: memory not compared");

  // A trace sees what was cudaMalloc'd, NCCL's buffers included, never the CUDA context; and a
  // run whose traces captured NCCL but show no communicator never allocated NCCL's buffers.
  double unseen_bytes = 0;
  if (memory == "reserved" && side.memory_overheads) {
    const double context = side.memory_overheads->cuda_context_bytes;
    const double nccl = side.memory_overheads->nccl_buffer_bytes;
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

  const std::vector<schema::StageFigures>& stages = side.figures.stages;
  const std::optional<int64_t> micro_batches = side.config ? side.config->micro_batches : std::nullopt;
  if (stages.size() != report.stages.size()) {
    plan.notes.push_back("the plan has " + std::to_string(stages.size()) + " stages, the run " +
                         std::to_string(report.stages.size()) +
                         "; compared stage by stage as far as both go");
  }
  for (size_t k = 0; k < stages.size() && k < report.stages.size(); ++k) {
    const schema::StageFigures& s = stages[k];
    const StageReport& measured = report.stages[k];
    PlanStageComparison c;
    c.stage = measured.stage;
    c.peak_memory_bytes =
        figure(memory == "allocated" ? s.allocated_bytes : s.peak_memory_bytes - unseen_bytes,
               memory == "none" || !measured.peak_memory_bytes
                   ? std::nullopt
                   : std::optional<double>(static_cast<double>(*measured.peak_memory_bytes)));
    c.forward_s = figure(s.forward_s, seconds(measured.forward_mean_ns));
    c.backward_s = figure(s.backward_s, seconds(measured.backward_mean_ns));
    const auto by_kind = [&](std::initializer_list<std::string_view> kinds, bool with_optimizer,
                             std::initializer_list<const char*> categories) -> std::optional<PlanFigure> {
      const std::optional<double> planned = planned_per_step_s(s, micro_batches, kinds, with_optimizer);
      const std::optional<double> run = measured_per_step_s(report, measured.stage, categories);
      if (!planned || !run) return std::nullopt;
      return figure(*planned, run);
    };
    c.gemm_s = by_kind({"gemm_s"}, false, {"gemm"});
    c.attention_s = by_kind({"attention_s"}, false, {"attention"});
    c.memory_bound_s = by_kind({"memory_bound_s"}, true, {"elementwise", "embedding", "other", "copy"});
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
      figure(side.figures.bubble_fraction,
             measured_stages == 0 ? std::nullopt
                                  : std::optional<double>(bubble / static_cast<double>(measured_stages)));
  // A relative error of a bubble under 1 % says nothing (one stage: 0 planned, 0.001 % measured).
  if (plan.bubble_fraction.measured && *plan.bubble_fraction.measured < 0.01)
    plan.bubble_fraction.error_percent = std::nullopt;
  plan.step_s = figure(side.figures.iteration_s,
                       report.steps.count == 0
                           ? std::nullopt
                           : std::optional<double>(static_cast<double>(report.steps.median_ns) * 1e-9));
  if (report.steps.count == 0) plan.notes.emplace_back("no steps in the traces: step time not measured");
  report.plan = std::move(plan);
  return Status::Ok();
}

}  // namespace pipescope::analysis
