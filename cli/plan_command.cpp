// `pipescope plan`: the model, cluster and batch options shared with `pipescope search`
// (plan_options.h, search_command.cpp) and a fixed TP/PP.
// plan loads the model, the cluster and its calibration, maps the flags onto a ParallelConfig,
// and prints the uniform and the suggested split (plan_output.h), optionally with the settings
// that make a framework run the suggested one.
#include <iostream>
#include <memory>
#include <optional>

#include "arg_specs.h"
#include "command.h"
#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/framework_settings.h"
#include "pipescope/planner/plan.h"
#include "plan_options.h"
#include "plan_output.h"

namespace pipescope::cli {
namespace {

const CLI::Validator kCount(whole_number_at_least(1), "N");
const char* const kPlan = "pipescope plan";

planner::ParallelConfig config_of(const PlanArgs& a, bool schedule_given) {
  planner::ParallelConfig c;
  c.gpus = a.gpus;
  c.tp = a.tp;
  c.pp = a.pp;
  c.vpp = a.vpp;
  c.cp = a.cp;
  c.ep = a.ep;
  c.micro_batch = a.mbs;
  c.global_batch = a.gbs;
  c.seq_length = a.seq;
  c.zero_stage = static_cast<int>(a.zero);
  c.zero_shard = a.zero_shard;
  c.sequence_parallel = a.sequence_parallel;
  c.flash_attention = !a.no_flash_attention;
  c.stage_layers = a.split;
  c.recompute = a.recompute == "selective" ? planner::RecomputeChoice::kSelective
                : a.recompute == "full"    ? planner::RecomputeChoice::kFull
                : a.recompute == "auto"    ? planner::RecomputeChoice::kAuto
                                           : planner::RecomputeChoice::kNone;
  c.schedule = a.schedule == "gpipe"         ? planner::ScheduleKind::kGPipe
               : a.schedule == "interleaved" ? planner::ScheduleKind::kInterleaved
                                             : planner::ScheduleKind::kOneFOneB;
  // Virtual stages only exist in the interleaved schedule (as in Megatron-LM, where giving them
  // turns it on).
  if (a.vpp > 1 && !schedule_given) c.schedule = planner::ScheduleKind::kInterleaved;
  c.balance = a.balance == "time" ? planner::BalanceGoal::kTime : planner::BalanceGoal::kMemory;
  return c;
}

int run_plan(const PlanArgs& a, bool schedule_given) {
  if (int rc = check_cluster_choice(kPlan, a); rc != kExitOk) return rc;
  auto model = models::load_model(a.model);
  if (!model.ok()) return usage_error(kPlan, model.error().message);
  auto cluster = cluster_of(a);
  if (!cluster.ok()) return usage_error(kPlan, cluster.error().message);
  auto profile = profile_of(a, cluster->gpu);
  if (!profile.ok()) return usage_error(kPlan, profile.error().message);
  auto config = planner::resolve_config(*model, config_of(a, schedule_given));
  if (!config.ok()) return usage_error(kPlan, config.error().message);
  auto outcome = planner::make_plan(planner::PlanInputs{*model, *cluster, *profile, *config});
  if (!outcome.ok()) return usage_error(kPlan, outcome.error().message);

  PlanPrintout printout{*model,   *cluster, *profile, a.calibration.empty() ? "bundled" : a.calibration,
                        *outcome, a.emit,   ""};
  if (!a.emit.empty()) {
    const auto framework = planner::parse_framework(a.emit);
    if (!framework) return usage_error(kPlan, "--emit must be megatron, deepspeed or internevo");
    printout.emit_text = planner::emit_settings(*framework, *model, *outcome).text;
  }
  if (a.json) {
    std::cout << plan_json(printout);
  } else {
    write_plan_text(std::cout, printout);
  }
  return kExitOk;
}

}  // namespace

Command add_plan_command(CLI::App& root) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* app =
      root.add_subcommand("plan", "Predict per-stage memory and step time; suggest a balanced split");
  add_shared_options(app, *a);
  app->add_option("--tp", a->tp, "Tensor-parallel size")->required()->check(kCount);
  app->add_option("--pp", a->pp, "Pipeline-parallel size")->required()->check(kCount);
  app->add_option("--vpp", a->vpp, "Virtual stages per pipeline rank")->check(kCount);
  app->add_option("--cp", a->cp, "Context-parallel size")->check(kCount);
  app->add_option("--ep", a->ep, "Expert-parallel size")->check(kCount);
  app->add_option("--zero", a->zero, "ZeRO stage")->check(CLI::Range(0, 3));
  app->add_option("--zero-shard", a->zero_shard, "Hierarchical ZeRO shard group size")->check(kCount);
  app->add_option("--recompute", a->recompute, "none, selective, full or auto")
      ->check(CLI::IsMember({"none", "selective", "full", "auto"}));
  app->add_flag("--sequence-parallel", a->sequence_parallel, "Megatron-style sequence parallelism");
  auto* schedule = app->add_option("--schedule", a->schedule, "1f1b, interleaved or gpipe")
                       ->check(CLI::IsMember({"1f1b", "interleaved", "gpipe"}));
  app->add_option("--balance", a->balance, "memory or time")->check(CLI::IsMember({"memory", "time"}));
  app->add_option("--split", a->split,
                  "Compare with the split run today: decoder layers per stage, e.g. 5,6,6,5")
      ->delimiter(',')
      ->check(CLI::Validator(whole_number_at_least(0), "N"));
  app->add_option("--emit", a->emit, "megatron, deepspeed or internevo")
      ->check(CLI::IsMember({"megatron", "deepspeed", "internevo"}));
  return {app, [a, schedule] { return run_plan(*a, schedule->count() > 0); }};
}

}  // namespace pipescope::cli
