// The options `pipescope plan` and `pipescope search` share (model, cluster or GPU, batch,
// calibration, --json) and the storage CLI11 binds them to. plan adds its fixed layout on top.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipescope/common/expected.h"
#include "pipescope/models/model_desc.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/parallel_config.h"
#include "pipescope/planner/plan.h"

namespace pipescope::cli {

struct PlanArgs {
  std::string model;
  std::string cluster;
  std::string gpu;
  int64_t gpus = 0;
  int64_t gpus_per_node = 0;   // 0: not given
  double inter_node_gbps = 0;  // 0: not given
  int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  int64_t vpp_group = 0;              // 0: --pp
  int64_t mbs = 1, gbs = 0, seq = 0;  // gbs, seq 0: the planner's defaults
  int64_t zero = 0, zero_shard = 0;
  std::string recompute = "none";
  bool sequence_parallel = false;
  bool no_flash_attention = false;
  std::vector<int64_t> split;   // decoder layers per stage of the split run today (plan only)
  std::string pipeline_layout;  // the same as a Megatron-LM layout string, chunks too (plan only)
  std::string schedule = "1f1b";
  std::string balance = "memory";
  std::string optimizer;  // empty: the framework's recipe (Megatron-LM's without one)
  std::string framework;  // empty: none named (planner::TrainingFramework::kGeneric)
  std::string grad_sync;  // empty: the framework's
  std::string calibration;
  double search_time_s = 1.0;  // the exact split search's budget, in seconds of one core (plan only)
  bool json = false;
  std::string emit;
};

// --model, --cluster | --gpu, --gpus, --gpus-per-node, --inter-node-gbps, --mbs, --gbs, --seq,
// --calibration, --no-flash-attention, --json.
void add_shared_options(CLI::App* app, PlanArgs& args);

// --cluster or --gpu must be given (CLI11 already refuses both); kExitOk or kExitUsage.
int check_cluster_choice(const std::string& command, const PlanArgs& args);

// The cluster of --cluster or --gpu with the --gpus-per-node / --inter-node-gbps overrides.
Expected<planner::Cluster> cluster_of(const PlanArgs& args);

// --calibration, checked against the GPU, or the bundled profile of the GPU.
Expected<planner::CalibrationProfile> profile_of(const PlanArgs& args, const planner::Gpu& gpu);

// --optimizer, else the --framework's recipe, else Megatron-LM's.
planner::OptimizerRecipe optimizer_of(const PlanArgs& args);

// The configuration the flags describe; `schedule_given`: --schedule was on the command line.
planner::ParallelConfig config_of(const PlanArgs& args, bool schedule_given);

// Everything a plan is made of, and the plan.
struct PlanRun {
  models::ModelDesc model;
  planner::Cluster cluster;
  planner::CalibrationProfile profile;
  planner::PlanOutcome outcome;
};
// Loads the model, cluster and profile (`profile` instead of --calibration when given) and plans.
Expected<PlanRun> run_planner(const PlanArgs& args, bool schedule_given,
                              const planner::CalibrationProfile* profile = nullptr);

// The plan's flags as the JSON object `inputs.arguments` of `plan --json`, and back: so that
// `calibrate fit --plan` can plan the same run again with a refined profile.
nlohmann::ordered_json plan_arguments_json(const PlanArgs& args, bool schedule_given);
struct PlanArguments {
  PlanArgs args;
  bool schedule_given = false;
};
Expected<PlanArguments> plan_arguments_from_json(const nlohmann::json& arguments, const std::string& origin);

}  // namespace pipescope::cli
