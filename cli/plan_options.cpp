#include "plan_options.h"

#include "pipescope/common/json_fields.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <tuple>

#include "arg_specs.h"
#include "command.h"
#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/pipeline_layout.h"

namespace pipescope::cli {

void add_shared_options(CLI::App* app, PlanArgs& a) {
  const CLI::Validator count(whole_number_at_least(1), "N");
  app->add_option("--model", a.model, "Bundled model name or a Hugging Face config.json")->required();
  auto* cluster =
      app->add_option("--cluster", a.cluster, "seren, kalos, dgx-a100, dgx-h100, or a cluster JSON");
  auto* gpu = app->add_option("--gpu", a.gpu, "a100-80gb, h100-80gb, h200-141gb or b200-180gb (nodes of 8)");
  cluster->excludes(gpu);
  gpu->excludes(cluster);
  app->add_option("--gpus", a.gpus, "Number of GPUs")->required()->check(count);
  app->add_option("--gpus-per-node", a.gpus_per_node, "GPUs per node (with --gpu)")->check(count);
  app->add_option("--inter-node-gbps", a.inter_node_gbps, "Inter-node bandwidth per node, Gb/s (with --gpu)")
      ->check(CLI::Validator(number_in_range(1.0, 1.0e6), "FLOAT in [1 - 1e6]"));
  app->add_option("--mbs", a.mbs, "Micro-batch size")->check(count)->capture_default_str();
  app->add_option("--gbs", a.gbs, "Global batch size")->check(count);
  app->add_option("--seq", a.seq, "Sequence length")->check(count);
  app->add_option("--calibration", a.calibration, "Calibration profile JSON")->check(CLI::ExistingFile);
  app->add_option("--optimizer", a.optimizer,
                  "megatron (default: Megatron-LM's mixed-precision Adam, sharded by --zero), deepspeed-bf16 "
                  "(DeepSpeed's BF16_Optimizer) or internevo (InternEvo's HybridZeroOptimizer)")
      ->check(CLI::IsMember({"megatron", "deepspeed-bf16", "internevo"}));
  app->add_option(
         "--framework", a.framework,
         "megatron-core (Megatron-LM since --overlap-grad-reduce), megatron-2022 (Megatron-LM of "
         "2021-2022: gradients all-reduced after the backward), megatron-2021 (Megatron-LM of SC'21: as "
         "megatron-2022, its tensor-parallel backward not overlapped), deepspeed, internevo, internlm-2023 "
         "(InternLM of 2023: its all-reduces take turns with the backward) or pytorch-eager (a decoder in "
         "eager PyTorch ops, every elementwise op its own kernel): sets the optimizer recipe (unless "
         "--optimizer), when the gradient sync runs, whether the tensor-parallel backward overlaps its "
         "GEMMs, "
         "whether the pipeline stages wait for their transfers and, for pytorch-eager, the kernels between "
         "the "
         "GEMMs")
      ->check(CLI::IsMember({"megatron-core", "megatron-2021", "megatron-2022", "deepspeed", "internevo",
                             "internlm-2023", "pytorch-eager"}));
  app->add_option(
         "--grad-sync", a.grad_sync,
         "during-backward or after-backward: when the data-parallel gradient sync runs, where the run "
         "departs from its --framework (e.g. Megatron-LM of 2022 with --DDP-impl torch: during)")
      ->check(CLI::IsMember({"during-backward", "after-backward"}));
  app->add_flag("--no-flash-attention", a.no_flash_attention,
                "Price unfused attention that stores its s x s scores (runs before flash attention)");
  app->add_flag("--json", a.json, "Print JSON");
}

int check_cluster_choice(const std::string& command, const PlanArgs& a) {
  if (a.cluster.empty() && a.gpu.empty()) return usage_error(command, "give --cluster NAME or --gpu NAME");
  return kExitOk;
}

Expected<planner::Cluster> cluster_of(const PlanArgs& a) {
  const std::optional<int> per_node =
      a.gpus_per_node > 0 ? std::optional<int>(static_cast<int>(a.gpus_per_node)) : std::nullopt;
  const std::optional<double> gbps =
      a.inter_node_gbps > 0 ? std::optional<double>(a.inter_node_gbps) : std::nullopt;
  if (!a.gpu.empty()) return planner::make_gpu_cluster(a.gpu, per_node, gbps);
  auto cluster = planner::load_cluster(a.cluster);
  if (!cluster.ok() || (!per_node && !gbps)) return cluster;
  return planner::with_node_overrides(std::move(*cluster), per_node, gbps);
}

Expected<planner::CalibrationProfile> profile_of(const PlanArgs& a, const planner::Gpu& gpu) {
  if (a.calibration.empty()) return planner::profile_for_gpu(gpu);
  auto profile = planner::load_calibration_profile(a.calibration);
  if (!profile.ok()) return profile;
  if (Status s = planner::check_profile_matches(*profile, gpu); !s.ok()) return s.error();
  return profile;
}

planner::OptimizerRecipe optimizer_of(const PlanArgs& a) {
  if (auto recipe = planner::parse_optimizer_recipe(a.optimizer)) return *recipe;
  return planner::framework_optimizer(
      planner::parse_training_framework(a.framework).value_or(planner::TrainingFramework::kGeneric));
}

planner::ParallelConfig config_of(const PlanArgs& a, bool schedule_given) {
  planner::ParallelConfig c;
  c.gpus = a.gpus;
  c.tp = a.tp;
  c.pp = a.pp;
  c.vpp = a.vpp;
  c.vpp_group = a.vpp_group;
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
  c.balance = a.balance == "time"       ? planner::BalanceGoal::kTime
              : a.balance == "headroom" ? planner::BalanceGoal::kHeadroom
                                        : planner::BalanceGoal::kMemory;
  c.framework = planner::parse_training_framework(a.framework).value_or(planner::TrainingFramework::kGeneric);
  c.optimizer = optimizer_of(a);
  c.grad_sync = planner::parse_grad_sync(a.grad_sync).value_or(planner::GradSync::kFrameworkDefault);
  return c;
}

// --pipeline-layout: one chunk per stage (the split, as --split gives it) or, interleaved, --vpp
// chunks per stage; the count must agree with --pp and --vpp.
Status apply_pipeline_layout(const PlanArgs& a, planner::ParallelConfig& c) {
  if (a.pipeline_layout.empty()) return Status::Ok();
  if (!a.split.empty()) return Error{"give --split or --pipeline-layout, not both"};
  auto chunks = planner::parse_pipeline_layout(a.pipeline_layout);
  if (!chunks) return Error{"--pipeline-layout: " + chunks.error().message};
  const auto count = static_cast<int64_t>(chunks->size());
  if (count != c.pp * c.vpp) {
    std::string hint;
    if (count % c.pp == 0 && count / c.pp != c.vpp)
      hint = "; with --pp " + std::to_string(c.pp) + " that is --vpp " + std::to_string(count / c.pp);
    return Error{"--pipeline-layout has " + std::to_string(count) + " chunks; --pp " + std::to_string(c.pp) +
                 " x --vpp " + std::to_string(c.vpp) + " needs " + std::to_string(c.pp * c.vpp) + hint};
  }
  if (c.vpp > 1) {
    c.chunk_layers = std::move(*chunks);
  } else {
    c.stage_layers = std::move(*chunks);
  }
  return Status::Ok();
}

Expected<PlanRun> run_planner(const PlanArgs& a, bool schedule_given,
                              const planner::CalibrationProfile* profile) {
  auto model = models::load_model(a.model);
  if (!model.ok()) return model.error();
  auto cluster = cluster_of(a);
  if (!cluster.ok()) return cluster.error();
  Expected<planner::CalibrationProfile> chosen =
      profile != nullptr ? Expected<planner::CalibrationProfile>(*profile) : profile_of(a, cluster->gpu);
  if (!chosen.ok()) return chosen.error();
  planner::ParallelConfig given = config_of(a, schedule_given);
  if (Status s = apply_pipeline_layout(a, given); !s) return s.error();
  auto config = planner::resolve_config(*model, given);
  if (!config.ok()) return config.error();
  planner::PlanInputs inputs{*model, *cluster, *chosen, *config};
  inputs.search_work = llround(a.search_time_s * static_cast<double>(planner::kSearchWorkPerSecond));
  auto outcome = planner::make_plan(inputs);
  if (!outcome.ok()) return outcome.error();
  return PlanRun{std::move(*model), std::move(*cluster), std::move(*chosen), std::move(*outcome)};
}

nlohmann::ordered_json plan_arguments_json(const PlanArgs& a, bool schedule_given) {
  return nlohmann::ordered_json{{"model", a.model},
                                {"cluster", a.cluster},
                                {"gpu", a.gpu},
                                {"gpus", a.gpus},
                                {"gpus_per_node", a.gpus_per_node},
                                {"inter_node_gbps", a.inter_node_gbps},
                                {"tp", a.tp},
                                {"pp", a.pp},
                                {"vpp", a.vpp},
                                {"vpp_group", a.vpp_group},
                                {"cp", a.cp},
                                {"ep", a.ep},
                                {"mbs", a.mbs},
                                {"gbs", a.gbs},
                                {"seq", a.seq},
                                {"zero", a.zero},
                                {"zero_shard", a.zero_shard},
                                {"recompute", a.recompute},
                                {"sequence_parallel", a.sequence_parallel},
                                {"no_flash_attention", a.no_flash_attention},
                                {"split", a.split},
                                {"pipeline_layout", a.pipeline_layout},
                                {"schedule", a.schedule},
                                {"schedule_given", schedule_given},
                                {"balance", a.balance},
                                {"calibration", a.calibration},
                                {"optimizer", a.optimizer},
                                {"framework", a.framework},
                                {"grad_sync", a.grad_sync},
                                {"search_time_s", a.search_time_s}};
}

Expected<PlanArguments> plan_arguments_from_json(const nlohmann::json& j, const std::string& origin) {
  PlanArguments out;
  PlanArgs& a = out.args;
  JsonFieldReader read(origin);
  const std::string path = "inputs.arguments";
  if (!read.expect_object(j, path)) return read.error();
  a.model = read.string(j, "model", path);
  a.cluster = read.string(j, "cluster", path, /*allow_empty=*/true);
  a.gpu = read.string(j, "gpu", path, /*allow_empty=*/true);
  a.gpus = read.integer(j, "gpus", path);
  a.gpus_per_node = read.integer(j, "gpus_per_node", path);
  a.inter_node_gbps = read.number(j, "inter_node_gbps", path);
  a.tp = read.integer(j, "tp", path);
  a.pp = read.integer(j, "pp", path);
  a.vpp = read.integer(j, "vpp", path);
  a.vpp_group = read.optional_integer(j, "vpp_group", path).value_or(0);  // plans since 2026-11-28
  a.cp = read.integer(j, "cp", path);
  a.ep = read.integer(j, "ep", path);
  a.mbs = read.integer(j, "mbs", path);
  a.gbs = read.integer(j, "gbs", path);
  a.seq = read.integer(j, "seq", path);
  a.zero = read.integer(j, "zero", path);
  a.zero_shard = read.integer(j, "zero_shard", path);
  a.recompute = read.string(j, "recompute", path);
  a.sequence_parallel = read.boolean(j, "sequence_parallel", path);
  a.no_flash_attention = read.boolean(j, "no_flash_attention", path);
  if (const nlohmann::json* split = read.optional_array(j, "split", path)) {
    for (size_t i = 0; i < split->size() && read.ok(); ++i) {
      a.split.push_back(read.integer_value((*split)[i], index_path(field_path(path, "split"), i)));
    }
  } else {
    read.fail_field(field_path(path, "split"), "is missing");
  }
  a.schedule = read.string(j, "schedule", path, /*allow_empty=*/true);
  out.schedule_given = read.boolean(j, "schedule_given", path);
  a.balance = read.string(j, "balance", path);
  a.calibration = read.string(j, "calibration", path, /*allow_empty=*/true);
  // Absent from plans written before they existed.
  a.optimizer = read.optional_string(j, "optimizer", path).value_or("");
  a.framework = read.optional_string(j, "framework", path).value_or("");
  a.grad_sync = read.optional_string(j, "grad_sync", path).value_or("");
  a.search_time_s = read.optional_number(j, "search_time_s", path).value_or(1.0);
  a.pipeline_layout = read.optional_string(j, "pipeline_layout", path).value_or("");
  if (!read.ok()) {
    return Error{read.error().message + "; write the plan again with this pipescope's 'plan --json'"};
  }
  // The words the command line would have refused, refused here too rather than read as defaults.
  const auto one_of = [](const std::string& value, std::initializer_list<std::string_view> words) {
    return std::find(words.begin(), words.end(), value) != words.end();
  };
  for (const auto& [key, value, ok] :
       {std::tuple{"recompute", a.recompute, one_of(a.recompute, {"none", "selective", "full", "auto"})},
        {"schedule", a.schedule, one_of(a.schedule, {"1f1b", "interleaved", "gpipe"})},
        {"balance", a.balance, one_of(a.balance, {"memory", "time", "headroom"})},
        {"optimizer", a.optimizer,
         a.optimizer.empty() || planner::parse_optimizer_recipe(a.optimizer).has_value()},
        {"framework", a.framework,
         a.framework.empty() || planner::parse_training_framework(a.framework).has_value()},
        {"grad_sync", a.grad_sync,
         a.grad_sync.empty() || planner::parse_grad_sync(a.grad_sync).has_value()}}) {
    if (!ok) {
      std::string message = origin;
      message += ": the plan's inputs.arguments.";
      message += key;
      message += " '" + value +
                 "' is not one pipescope plans for; write the plan again with this pipescope's "
                 "'plan --json'";
      return Error{message};
    }
  }
  return out;
}

}  // namespace pipescope::cli
