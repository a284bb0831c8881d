// A training configuration as the planner takes it: the parallel layout, the batch, and the
// memory-saving choices. DP is derived: gpus / (tp * pp * cp). Expert parallelism lives inside
// data parallelism (Megatron-LM: experts are sharded over ep of the dp ranks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/models/cost_options.h"
#include "pipescope/models/model_desc.h"
#include "pipescope/planner/pipeline_schedule.h"

namespace pipescope::planner {

enum class RecomputeChoice { kNone, kSelective, kFull, kAuto };  // kAuto: the optimizer picks per stage
// kMemory: the least peak within 2 % of the fastest fitting split's time; kHeadroom: the same
// within the larger of that and the uniform split's time (lower peaks, slower steps); kTime: the
// fastest split that fits (planner/schedule/include/pipescope/planner/partition_optimizer.h).
enum class BalanceGoal { kMemory, kTime, kHeadroom };

// What the mixed-precision Adam optimizer keeps per parameter (cost_model.h has the derivation):
//   kMegatron       Megatron-LM: bf16 weights, fp32 main gradients, fp32 master weights and Adam
//                   moments; --zero shards them (ZeRO 1: the 12 bytes of master and moments, as
//                   Megatron's distributed optimizer does; 2: also the gradients; 3: also weights).
//   kDeepSpeedBf16  DeepSpeed's BF16_Optimizer (bf16 with ZeRO stage 0 or 1): bf16 weights and the
//                   bf16 gradients autograd makes, an fp32 gradient buffer that is not sharded,
//                   fp32 master weights and Adam moments sharded over data parallelism.
//   kInternEvo      InternEvo's HybridZeroOptimizer (ZeRO stage 0 or 1): bf16 weights and bf16
//                   gradients, fp32 master weights and Adam moments sharded within the zero1
//                   group (--zero-shard, else all of data parallelism); gradients all-reduced in
//                   bf16 over all of data parallelism, updated weights broadcast from each shard.
enum class OptimizerRecipe { kMegatron, kDeepSpeedBf16, kInternEvo };

struct ParallelConfig {
  int64_t gpus = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t vpp = 1;  // virtual chunks per pipeline rank (interleaved schedule)
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t micro_batch = 1;
  int64_t global_batch = 0;  // 0: micro_batch * dp * pp (one micro-batch per pipeline stage and DP rank)
  int64_t seq_length = 0;    // 0: the model's max_position_embeddings, capped at 4096
  int zero_stage = 0;        // 0..3: what is sharded over DP (1 optimizer, 2 + gradients, 3 + weights)
  int64_t zero_shard = 0;    // hierarchical ZeRO: shard within groups of this many DP ranks; 0 = all of DP
  RecomputeChoice recompute = RecomputeChoice::kNone;
  bool sequence_parallel = false;
  bool flash_attention = true;
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  BalanceGoal balance = BalanceGoal::kMemory;
  OptimizerRecipe optimizer = OptimizerRecipe::kMegatron;
  // Decoder layers per stage of the split the user runs today (the embedding on the first
  // stage, the head on the last); empty: the framework's uniform split. It is the baseline the
  // suggested split is compared with.
  std::vector<int64_t> stage_layers;
  // The interleaved schedule's chunks as the user runs them (a layout, pipeline_layout.h): decoder
  // layers per chunk in model order, pp x vpp of them, chunk g on pipeline rank g mod pp; the
  // embedding in the first, the output layer in the last. Empty: Megatron-LM's uniform chunks.
  std::vector<int64_t> chunk_layers;

  int64_t dp() const { return gpus / (tp * pp * cp); }
  int64_t micro_batches() const { return global_batch / (micro_batch * dp()); }
  int64_t shard_group() const { return zero_shard > 0 ? zero_shard : dp(); }
};

// Fills the defaults (global batch, sequence length) and refuses what a framework would refuse,
// naming the numbers: TP not dividing the heads, PP above the layer count, a batch that does not
// divide, and so on.
Expected<ParallelConfig> resolve_config(const models::ModelDesc& model, ParallelConfig config);

// The per-rank cost options of one micro-batch for a recompute mode.
models::CostOptions cost_options(const ParallelConfig& config, models::RecomputeMode recompute);

std::string_view to_string(RecomputeChoice choice);
std::string_view to_string(BalanceGoal goal);  // the --balance spellings
// "megatron", "deepspeed-bf16", "internevo": the --optimizer spellings
std::string_view to_string(OptimizerRecipe recipe);
std::optional<OptimizerRecipe> parse_optimizer_recipe(std::string_view name);
std::string describe(const ParallelConfig& config);  // "tp 8, pp 4, dp 64, mbs 1, gbs 1024, ..."

}  // namespace pipescope::planner
