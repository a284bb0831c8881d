#include "plan_options.h"

#include <optional>

#include "arg_specs.h"
#include "command.h"

namespace pipescope::cli {

void add_shared_options(CLI::App* app, PlanArgs& a) {
  const CLI::Validator count(whole_number_at_least(1), "N");
  app->add_option("--model", a.model, "Bundled model name or a Hugging Face config.json")->required();
  auto* cluster =
      app->add_option("--cluster", a.cluster, "seren, kalos, dgx-a100, dgx-h100, or a cluster JSON");
  auto* gpu = app->add_option("--gpu", a.gpu, "a100-80gb, h100-80gb or h200-141gb (nodes of 8)");
  cluster->excludes(gpu);
  gpu->excludes(cluster);
  app->add_option("--gpus", a.gpus, "Number of GPUs")->required()->check(count);
  app->add_option("--gpus-per-node", a.gpus_per_node, "GPUs per node (with --gpu)")->check(count);
  app->add_option("--inter-node-gbps", a.inter_node_gbps, "Inter-node bandwidth per node, Gb/s (with --gpu)")
      ->check(CLI::Range(1.0, 1.0e6));
  app->add_option("--mbs", a.mbs, "Micro-batch size")->check(count)->capture_default_str();
  app->add_option("--gbs", a.gbs, "Global batch size")->check(count);
  app->add_option("--seq", a.seq, "Sequence length")->check(count);
  app->add_option("--calibration", a.calibration, "Calibration profile JSON")->check(CLI::ExistingFile);
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

}  // namespace pipescope::cli
