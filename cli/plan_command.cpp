// `pipescope plan` and `pipescope search`: the same model, cluster and batch options; plan
// takes a fixed TP/PP, search ranks every feasible configuration.
#include <memory>

#include "arg_specs.h"
#include "command.h"

namespace pipescope::cli {
namespace {

const CLI::Validator kCount(whole_number_at_least(1), "N");
const CLI::Validator kIndex(whole_number_at_least(0), "N");

struct PlanArgs {
  std::string model;
  std::string cluster;
  std::string gpu;
  int64_t gpus = 0;
  int64_t gpus_per_node = 0;
  double inter_node_gbps = 0;
  int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  int64_t mbs = 1, gbs = 0, seq = 0;
  int64_t zero = 0, zero_shard = 0;
  std::string recompute = "none";
  bool sequence_parallel = false;
  std::string schedule = "1f1b";
  std::string balance = "memory";
  std::string calibration;
  bool json = false;
  std::string emit;
};

void add_shared_options(CLI::App* app, PlanArgs& a) {
  app->add_option("--model", a.model, "Bundled model name or a Hugging Face config.json")->required();
  auto* cluster =
      app->add_option("--cluster", a.cluster, "seren, kalos, dgx-a100, dgx-h100, or a cluster JSON");
  auto* gpu = app->add_option("--gpu", a.gpu, "a100-80gb, h100-80gb or h200-141gb (nodes of 8)");
  cluster->excludes(gpu);
  gpu->excludes(cluster);
  app->add_option("--gpus", a.gpus, "Number of GPUs")->required()->check(kCount);
  app->add_option("--gpus-per-node", a.gpus_per_node, "GPUs per node (with --gpu)")->check(kCount);
  app->add_option("--inter-node-gbps", a.inter_node_gbps, "Inter-node bandwidth per node, Gb/s (with --gpu)")
      ->check(CLI::Range(1.0, 1.0e6));
  app->add_option("--mbs", a.mbs, "Micro-batch size")->check(kCount)->capture_default_str();
  app->add_option("--gbs", a.gbs, "Global batch size")->check(kCount);
  app->add_option("--seq", a.seq, "Sequence length")->check(kCount);
  app->add_option("--calibration", a.calibration, "Calibration profile JSON")->check(CLI::ExistingFile);
  app->add_flag("--json", a.json, "Print JSON");
}

int check_cluster_choice(const std::string& command, const PlanArgs& a) {
  if (a.cluster.empty() && a.gpu.empty()) return usage_error(command, "give --cluster NAME or --gpu NAME");
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
  app->add_option("--schedule", a->schedule, "1f1b, interleaved or gpipe")
      ->check(CLI::IsMember({"1f1b", "interleaved", "gpipe"}));
  app->add_option("--balance", a->balance, "memory or time")->check(CLI::IsMember({"memory", "time"}));
  app->add_option("--emit", a->emit, "megatron, deepspeed or internevo")
      ->check(CLI::IsMember({"megatron", "deepspeed", "internevo"}));
  return {app, [a] {
            if (int rc = check_cluster_choice("pipescope plan", *a); rc != kExitOk) return rc;
            return not_built_yet("pipescope plan");
          }};
}

Command add_search_command(CLI::App& root) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* app = root.add_subcommand("search", "Rank every feasible parallel configuration");
  add_shared_options(app, *a);
  return {app, [a] {
            if (int rc = check_cluster_choice("pipescope search", *a); rc != kExitOk) return rc;
            return not_built_yet("pipescope search");
          }};
}

}  // namespace pipescope::cli
