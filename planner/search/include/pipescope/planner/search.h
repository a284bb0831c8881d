// `pipescope search`: every parallel configuration of a model on a GPU count at one global batch,
// those that fit ranked by predicted throughput, the others grouped by why they were refused.
//
// A configuration is (TP, PP, virtual stages, micro-batch, ZeRO stage and shard group,
// recompute, schedule); DP is what is left of the GPUs. Sequence parallelism is on whenever
// TP > 1: Megatron-LM's recommendation (Korthikanti et al. 2022), it only removes activation
// memory and replaces each all-reduce by an all-gather and a reduce-scatter of the same volume.
//
// Each configuration is planned on the split a framework runs by default (Megatron's uniform
// split; for the interleaved schedule its uniform chunks). When that split runs out of memory
// but a contiguous split exists that fits, the configuration is planned on the time-balanced
// split that fits (the one with the least slowest-stage time) and says so; `pipescope plan`
// refines such a split with the exact partition optimizer. Figures are those of `pipescope
// plan`'s baseline for the same configuration and split.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/models/model_desc.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/parallel_config.h"
#include "pipescope/planner/pipeline_schedule.h"

namespace pipescope::planner {

inline constexpr int kSearchSchemaVersion = 1;

// What the search may vary. The defaults search everything the planner models.
struct SearchConstraints {
  int64_t cp = 1;      // context parallelism, fixed
  int64_t ep = 1;      // expert parallelism, fixed (mixture-of-experts models)
  int64_t max_tp = 0;  // 0: the cluster's GPUs per node (tensor parallelism stays on NVLink)
  // Dimensions the user pinned (`search --tp 8`): only that value is searched. Unset: every one.
  std::optional<int64_t> tp, pp;
  std::optional<int64_t> vpp;  // 1: no interleaving; N > 1: the interleaved schedule with N chunks
  std::vector<int64_t> micro_batches = {1, 2, 4, 8};
  std::vector<ScheduleKind> schedules = {ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved,
                                         ScheduleKind::kGPipe};
  // kAuto is not searched with the interleaved schedule: the planner runs it as selective there.
  std::vector<RecomputeChoice> recompute = {RecomputeChoice::kNone, RecomputeChoice::kSelective,
                                            RecomputeChoice::kFull, RecomputeChoice::kAuto};
  std::vector<int> zero_stages = {0, 1, 2, 3};
  // Hierarchical ZeRO (ZeRO stage >= 1): besides sharding over all of DP, shard within groups of
  // every power of two from 2 below DP that divides it.
  bool shard_groups = true;
};

struct SearchRequest {
  models::ModelDesc model;
  Cluster cluster;
  CalibrationProfile profile;
  int64_t gpus = 0;
  int64_t global_batch = 0;  // sequences per iteration; the same for every configuration
  int64_t seq_length = 0;    // 0: resolve_config()'s default
  bool flash_attention = true;
  // DeepSpeed's BF16_Optimizer shards on its own at ZeRO stage 0 or 1, so the search varies no
  // ZeRO stage for it.
  OptimizerRecipe optimizer = OptimizerRecipe::kMegatron;
  TrainingFramework framework = TrainingFramework::kGeneric;
  GradSync grad_sync = GradSync::kFrameworkDefault;
  SearchConstraints constraints;
  // How many of the fastest configurations to plan and return; 0: every one that fits.
  int64_t top = 20;
};

struct RankedPlan {
  ParallelConfig config;                     // resolved
  std::vector<int64_t> stage_layers;         // decoder layers per pipeline stage, of the split planned
  std::vector<std::string> stage_recompute;  // none, selective or full, per stage
  double iteration_s = 0;
  double pipeline_s = 0;  // the simulated schedule; iteration_s adds the exposed DP sync and optimizer
  double bubble_fraction = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;      // model FLOPs (no recompute) per second and GPU, in TFLOP/s
  double mfu = 0;                 // model FLOPs / (iteration x GPUs x peak dense bf16)
  double mfu_causal = 0;          // the same with causal attention halved (models::IterationFlops)
  int64_t peak_memory_bytes = 0;  // reserved, of the worst stage
  bool fits = true;
  bool uniform_fits = true;  // false: only the balanced split fits
  // The figures are those of a split other than the uniform one: the balanced split (1F1B, GPipe),
  // or the interleaved schedule's suggested layout where it differs from the uniform chunks.
  bool balanced_split = false;
  int64_t uniform_peak_memory_bytes = 0;  // of the uniform split (with the least-memory recompute under auto)
};

// Configurations refused for one reason, e.g. "tp 16 exceeds the 8 GPUs of a node".
struct Rejection {
  std::string reason;
  int64_t configs = 0;
};

struct SearchStats {
  int64_t candidates = 0;  // configurations enumerated
  int64_t rejected = 0;
  int64_t feasible = 0;  // fit in memory on some split
  // Interleaved, uniform chunks out of memory, kept because some layout might fit, and never
  // planned: their bound was beyond the ranking's last. Whether they fit is not known.
  int64_t might_fit = 0;
  int64_t duplicates = 0;   // recompute auto choosing one mode on every stage: the same plan as that mode
  int64_t cost_models = 0;  // built (per-layer-kind ones for screening, full ones for the ranked)
  int64_t exact_plans = 0;  // planned with the full cost model and the schedule simulator
  double elapsed_s = 0;
};

struct SearchResult {
  int64_t seq_length = 0;
  int64_t capacity_bytes = 0;       // GPU memory less the profile's headroom
  std::vector<RankedPlan> ranked;   // fastest first; at most `top`
  std::vector<Rejection> rejected;  // most configurations first
  SearchStats stats;
  std::vector<std::string> notes;  // modelling choices the user should know about
};

// Fails on a request that cannot be searched (no GPUs, no batch, an empty constraint list, a
// profile for another GPU, a model that does not validate); a search that finds nothing
// feasible succeeds with an empty ranking and the rejections.
Expected<SearchResult> search(const SearchRequest& request);

}  // namespace pipescope::planner
