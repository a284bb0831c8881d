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
//   kInternEvo      InternEvo (c628a8c8). ZeRO stage 0 or 1, HybridZeroOptimizer: bf16 weights and
//                   bf16 gradients, fp32 master weights and Adam moments sharded within the zero1
//                   group (--zero-shard, else all of data parallelism); gradients all-reduced in
//                   bf16 over all of data parallelism, updated weights broadcast from each shard.
//                   ZeRO stage 3, zero1.fsdp (torch FSDP, FULL_SHARD, in the zero1 group, with
//                   FSDPadaptOptimizer; no pipeline parallelism): bf16 weights and gradients, fp32
//                   master weights and Adam moments, all sharded in the group; gradients
//                   reduce-scattered in bf16 within it every micro-batch, and the shards
//                   all-reduced across the groups in the optimizer step.
enum class OptimizerRecipe { kMegatron, kDeepSpeedBf16, kInternEvo };

// The training framework whose behaviour a plan prices (docs/planner.md, "Frameworks"), each read
// from the framework's code at a named commit: its optimizer recipe (unless --optimizer says
// otherwise) and whether the data-parallel gradient sync overlaps the last backward.
//   kGeneric       none named: the optimizer recipe's own habit (DeepSpeed's after the backward,
//                  the others during it).
//   kMegatronCore  Megatron-LM since --overlap-grad-reduce (2d5220a4 of 2023-09-05): the sync's
//                  buckets all-reduce (or reduce-scatter) as the backward produces them.
//   kMegatron2021  Megatron-LM of SC'21 (de7dc40f of 2021-08-10, examples/sc21): as kMegatron2022,
//                  but its column-parallel linears all-reduce the input gradient in the backward
//                  before the weight-gradient GEMM runs (copy_to_tensor_model_parallel_region).
//   kMegatron2022  Megatron-LM of 2021-2022 (386923b5 of 2021-10-01, 2755bcb8 of 2022-06-24): the
//                  default local DDP all-reduces the gradients after forward_backward_func
//                  returns (train_step), before the optimizer step; the column-parallel linears
//                  overlap their backward's collectives with their GEMMs
//                  (tensor_parallel_overlaps_backward_gemms).
//   kDeepSpeed     DeepSpeed's pipeline engine with BF16_Optimizer: ReduceGrads after the last
//                  backward (cost_model.h).
//   kInternEvo     InternEvo with HybridZeroOptimizer and overlap_sync_grad (c628a8c8 of 2024):
//                  each bucket's all-reduce waits on the communication handle, on the GPU only.
//   kInternLM2023  InternLM of 2023 (20fe5ac, 01e7fd61), the same optimizer: its reduction hook
//                  synchronizes (the device at 20fe5ac, the communication stream at 01e7fd61)
//                  before each bucket's all-reduce, so backward and all-reduces take turns: the
//                  sync is priced as after the backward (docs/validation.md, V09).
//   kPyTorchEager  a dense decoder in eager PyTorch ops as examples/llama_train_step.py writes it
//                  (PyTorch 2.11): every elementwise op its own kernel (eager_kernels.h), the
//                  main gradients accumulated by hooks, Megatron-LM's optimizer recipe stepped by
//                  fused Adam, and the gradients all-reduced after the backward.
enum class TrainingFramework {
  kGeneric,
  kMegatronCore,
  kMegatron2021,
  kMegatron2022,
  kDeepSpeed,
  kInternEvo,
  kInternLM2023,
  kPyTorchEager
};

// When the data-parallel gradient sync runs, where a run departs from its framework's default
// (--grad-sync): Megatron-LM of 2021-2022 with --DDP-impl torch, PyTorch's DDP, all-reduces its
// buckets during the backward, as the SC'21 runs of up to 18B parameters did.
enum class GradSync { kFrameworkDefault, kDuringBackward, kAfterBackward };

struct ParallelConfig {
  int64_t gpus = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t vpp = 1;  // virtual chunks per pipeline rank (interleaved schedule)
  // Interleaved: micro-batches a stage runs through one chunk before the next (--vpp-group,
  // Megatron-LM's --microbatch-group-size-per-virtual-pipeline-stage); 0: pp, Megatron's default.
  int64_t vpp_group = 0;
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
  TrainingFramework framework = TrainingFramework::kGeneric;
  GradSync grad_sync = GradSync::kFrameworkDefault;
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
// "megatron-core", "megatron-2021", "megatron-2022", "deepspeed", "internevo", "internlm-2023",
// "pytorch-eager" (the
// --framework spellings); kGeneric is "generic" and is not a --framework choice.
std::string_view to_string(TrainingFramework framework);
std::optional<TrainingFramework> parse_training_framework(std::string_view name);
// Whether the column-parallel linears run their backward's tensor-parallel collectives beside
// their GEMMs (Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication, on by default since
// 16c90445 of 2021-09-02): the input gradient's all-reduce, or with sequence parallelism its
// reduce-scatter, beside the weight-gradient GEMM, and the input's all-gather beside the
// input-gradient GEMM. Megatron-LM of SC'21 (megatron-2021), DeepSpeed's Megatron fork
// (bigscience-workshop/Megatron-DeepSpeed: copy_to_tensor_model_parallel_region) and the
// frameworks whose kernels are listed run them in turn; so is a plan that names none priced.
bool tensor_parallel_overlaps_backward_gemms(const ParallelConfig& config);
// Whether a pipeline stage waits for its own p2p transfers (ScheduleSpec::p2p_blocks): Megatron-LM
// of 2021-2022 synchronizes the device after every batch of sends and receives
// (p2p_communication._communicate at de7dc40f and 2755bcb8), megatron-core waits on them except
// in the interleaved schedule, which overlaps them by default since 4eeff55d of 2023-10-12, and
// DeepSpeed's pipeline engine sends and receives synchronously (runtime/pipe/p2p.py at
// 56c522386). The others, and a plan that names no framework, price a transfer as a latency.
bool pipeline_p2p_blocks(const ParallelConfig& config);
// Whether the pipeline sends 1/tp of each activation and all-gathers it over the tensor-parallel
// group on arrival (Megatron-LM of 2021-2022's --scatter-gather-tensors-in-pipeline, on by
// default; with sequence parallelism the activation is already a 1/tp shard and needs no gather).
bool pipeline_p2p_scatters(const ParallelConfig& config);
// "during-backward", "after-backward" (the --grad-sync spellings); kFrameworkDefault is "default".
std::string_view to_string(GradSync sync);
std::optional<GradSync> parse_grad_sync(std::string_view name);
// The optimizer recipe a framework runs (kGeneric: Megatron-LM's).
OptimizerRecipe framework_optimizer(TrainingFramework framework);
// Whether the data-parallel gradient sync runs during the last backward: --grad-sync, else the
// framework's (TrainingFramework's comment).
bool sync_overlaps_backward(const ParallelConfig& config);
// What the optimizer recipe can shard at config's ZeRO stage and layout (InternEvo: zero1 at
// stage 1, zero1.fsdp at stage 3 without pipeline parallelism or experts); resolve_config() checks
// it, and search checks each ZeRO variant with it.
Status check_optimizer_sharding(const models::ModelDesc& model, const ParallelConfig& config);
std::string describe(const ParallelConfig& config);  // "tp 8, pp 4, dp 64, mbs 1, gbs 1024, ..."

}  // namespace pipescope::planner
