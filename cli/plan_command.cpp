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

int run_plan(const PlanArgs& a, bool schedule_given) {
  if (int rc = check_cluster_choice(kPlan, a); rc != kExitOk) return rc;
  auto run = run_planner(a, schedule_given);
  if (!run.ok()) return usage_error(kPlan, run.error().message);
  const models::ModelDesc* model = &run->model;
  const planner::PlanOutcome* outcome = &run->outcome;

  PlanPrintout printout{
      run->model,   run->cluster, run->profile, a.calibration.empty() ? "bundled" : a.calibration,
      run->outcome, a.emit,       "",           plan_arguments_json(a, schedule_given)};
  if (!a.emit.empty()) {
    const auto framework = planner::parse_framework(a.emit);
    if (!framework) return usage_error(kPlan, "--emit must be megatron, deepspeed or internevo");
    // Settings a framework cannot make exact are planned on the suggested split as it runs them.
    const planner::PlanInputs inputs{run->model, run->cluster, run->profile, outcome->config};
    const auto pricer = planner::uniform_recompute_pricer(inputs, outcome->suggested);
    printout.emit_text =
        planner::emit_settings(*framework, *model, *outcome, pricer.ok() ? &*pricer : nullptr).text;
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
  app->add_option("--vpp-group", a->vpp_group,
                  "Interleaved: micro-batches a stage runs through one chunk before the next (Megatron-LM's "
                  "--microbatch-group-size-per-virtual-pipeline-stage; default --pp)")
      ->check(kCount);
  app->add_option("--cp", a->cp, "Context-parallel size")->check(kCount);
  app->add_option("--ep", a->ep, "Expert-parallel size")->check(kCount);
  app->add_option("--zero", a->zero, "ZeRO stage")->check(CLI::Range(0, 3));
  app->add_option("--zero-shard", a->zero_shard, "Hierarchical ZeRO shard group size")->check(kCount);
  app->add_option("--recompute", a->recompute, "none, selective, full or auto")
      ->check(CLI::IsMember({"none", "selective", "full", "auto"}));
  app->add_flag("--sequence-parallel", a->sequence_parallel, "Megatron-style sequence parallelism");
  auto* schedule = app->add_option("--schedule", a->schedule, "1f1b, interleaved or gpipe")
                       ->check(CLI::IsMember({"1f1b", "interleaved", "gpipe"}));
  app->add_option(
         "--balance", a->balance,
         "memory (default): the least peak within 2% of the fastest fitting split's time; time: the "
         "fastest split that fits; headroom: the least peak within the larger of 2% over the fastest "
         "and the uniform split's time")
      ->check(CLI::IsMember({"memory", "time", "headroom"}));
  app->add_option("--split", a->split,
                  "Compare with the split run today: decoder layers per stage, e.g. 5,6,6,5")
      ->delimiter(',')
      ->check(CLI::Validator(whole_number_at_least(0), "N"));
  app->add_option("--pipeline-layout", a->pipeline_layout,
                  "The split as Megatron-LM's --pipeline-model-parallel-layout, e.g. \"Et*3|(t*4|)*6t*3L\"; "
                  "with --vpp, the interleaved schedule's chunks");
  app->add_option("--search-time", a->search_time_s,
                  "Budget of the exact split search in seconds of one core (default 1); counted in work, "
                  "so the same input always gives the same plan")
      ->check(CLI::Validator(number_in_range(0.001, 3600.0), "FLOAT in [0.001 - 3600]"));
  app->add_option("--emit", a->emit, "megatron, deepspeed or internevo")
      ->check(CLI::IsMember({"megatron", "deepspeed", "internevo"}));
  return {app, [a, schedule] { return run_plan(*a, schedule->count() > 0); }};
}

}  // namespace pipescope::cli
