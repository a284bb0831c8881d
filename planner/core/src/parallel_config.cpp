#include "pipescope/planner/parallel_config.h"

#include <algorithm>

namespace pipescope::planner {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

constexpr int64_t kMostGpus = int64_t{1} << 21;
constexpr int64_t kMostMicroBatch = 65536;
constexpr int64_t kMostGlobalBatch = int64_t{1} << 24;
constexpr int64_t kMostSequence = int64_t{1} << 24;
// Micro-batches x stages x virtual chunks: one simulated step holds twice as many operations.
constexpr int64_t kMostScheduleOps = int64_t{1} << 20;

Status at_most(int64_t value, int64_t most, const char* flag) {
  if (value <= most) return Status::Ok();
  return Error{std::string(flag) + " " + num(value) + " is above the " + num(most) +
               " pipescope plans for; is it a typo?"};
}

}  // namespace

std::string_view to_string(RecomputeChoice choice) {
  switch (choice) {
    case RecomputeChoice::kNone: return "none";
    case RecomputeChoice::kSelective: return "selective";
    case RecomputeChoice::kFull: return "full";
    case RecomputeChoice::kAuto: return "auto";
  }
  return "?";
}

std::string_view to_string(BalanceGoal goal) {
  switch (goal) {
    case BalanceGoal::kMemory: return "memory";
    case BalanceGoal::kTime: return "time";
    case BalanceGoal::kHeadroom: return "headroom";
  }
  return "?";
}

std::string_view to_string(OptimizerRecipe recipe) {
  switch (recipe) {
    case OptimizerRecipe::kMegatron: return "megatron";
    case OptimizerRecipe::kDeepSpeedBf16: return "deepspeed-bf16";
    case OptimizerRecipe::kInternEvo: return "internevo";
  }
  return "?";
}

std::optional<OptimizerRecipe> parse_optimizer_recipe(std::string_view name) {
  for (OptimizerRecipe recipe :
       {OptimizerRecipe::kMegatron, OptimizerRecipe::kDeepSpeedBf16, OptimizerRecipe::kInternEvo}) {
    if (name == to_string(recipe)) return recipe;
  }
  return std::nullopt;
}

std::string_view to_string(TrainingFramework framework) {
  switch (framework) {
    case TrainingFramework::kGeneric: return "generic";
    case TrainingFramework::kMegatronCore: return "megatron-core";
    case TrainingFramework::kMegatron2021: return "megatron-2021";
    case TrainingFramework::kMegatron2022: return "megatron-2022";
    case TrainingFramework::kDeepSpeed: return "deepspeed";
    case TrainingFramework::kInternEvo: return "internevo";
    case TrainingFramework::kInternLM2023: return "internlm-2023";
    case TrainingFramework::kPyTorchEager: return "pytorch-eager";
  }
  return "?";
}

namespace {

// Frameworks whose listed kernels are those of a dense decoder (eager_kernels.h,
// internlm_kernels.h): whose, for the refusal of a mixture-of-experts model; null for the others.
const char* dense_decoder_kernels(TrainingFramework framework) {
  switch (framework) {
    case TrainingFramework::kPyTorchEager: return "examples/llama_train_step.py's kernels";
    case TrainingFramework::kInternLM2023:
      return "InternLM's kernels of 2023, which had no experts; --framework internevo plans InternEvo's";
    default: return nullptr;
  }
}

}  // namespace

std::optional<TrainingFramework> parse_training_framework(std::string_view name) {
  for (TrainingFramework framework :
       {TrainingFramework::kMegatronCore, TrainingFramework::kMegatron2021, TrainingFramework::kMegatron2022,
        TrainingFramework::kDeepSpeed, TrainingFramework::kInternEvo, TrainingFramework::kInternLM2023,
        TrainingFramework::kPyTorchEager}) {
    if (name == to_string(framework)) return framework;
  }
  return std::nullopt;
}

OptimizerRecipe framework_optimizer(TrainingFramework framework) {
  switch (framework) {
    case TrainingFramework::kDeepSpeed: return OptimizerRecipe::kDeepSpeedBf16;
    case TrainingFramework::kInternEvo:
    case TrainingFramework::kInternLM2023: return OptimizerRecipe::kInternEvo;
    case TrainingFramework::kGeneric:
    case TrainingFramework::kMegatronCore:
    case TrainingFramework::kMegatron2021:
    case TrainingFramework::kMegatron2022:
    case TrainingFramework::kPyTorchEager: break;
  }
  return OptimizerRecipe::kMegatron;
}

std::string_view to_string(GradSync sync) {
  switch (sync) {
    case GradSync::kFrameworkDefault: return "default";
    case GradSync::kDuringBackward: return "during-backward";
    case GradSync::kAfterBackward: return "after-backward";
  }
  return "?";
}

std::optional<GradSync> parse_grad_sync(std::string_view name) {
  for (GradSync sync : {GradSync::kDuringBackward, GradSync::kAfterBackward}) {
    if (name == to_string(sync)) return sync;
  }
  return std::nullopt;
}

bool sync_overlaps_backward(const ParallelConfig& c) {
  if (c.grad_sync != GradSync::kFrameworkDefault) return c.grad_sync == GradSync::kDuringBackward;
  // InternEvo's FSDPadaptOptimizer all-reduces the gradient shards across the zero1 groups in
  // its step(), after the backward.
  if (c.optimizer == OptimizerRecipe::kInternEvo && c.zero_stage == 3) return false;
  switch (c.framework) {
    case TrainingFramework::kMegatronCore:
    case TrainingFramework::kInternEvo: return true;
    case TrainingFramework::kMegatron2021:
    case TrainingFramework::kMegatron2022:
    case TrainingFramework::kDeepSpeed:
    case TrainingFramework::kInternLM2023:
    case TrainingFramework::kPyTorchEager: return false;
    case TrainingFramework::kGeneric: break;
  }
  // DeepSpeed's pipeline engine issues ReduceGrads after the last backward (pipe/schedule.py,
  // TrainSchedule: ReduceTiedGrads, ReduceGrads, OptimizerStep at the batch's last step), and its
  // engine without a pipeline all-reduces BF16_Optimizer's gradients after the backward too.
  return c.optimizer != OptimizerRecipe::kDeepSpeedBf16;
}

bool tensor_parallel_overlaps_backward_gemms(const ParallelConfig& c) {
  return c.framework == TrainingFramework::kMegatronCore || c.framework == TrainingFramework::kMegatron2022;
}

bool pipeline_p2p_blocks(const ParallelConfig& c) {
  switch (c.framework) {
    case TrainingFramework::kMegatron2021:
    case TrainingFramework::kMegatron2022:
    case TrainingFramework::kDeepSpeed: return true;
    case TrainingFramework::kMegatronCore: return c.schedule != ScheduleKind::kInterleaved;
    case TrainingFramework::kGeneric:
    case TrainingFramework::kInternEvo:
    case TrainingFramework::kInternLM2023:
    case TrainingFramework::kPyTorchEager: break;
  }
  return false;
}

bool pipeline_p2p_scatters(const ParallelConfig& c) {
  return c.framework == TrainingFramework::kMegatron2021 || c.framework == TrainingFramework::kMegatron2022;
}

models::CostOptions cost_options(const ParallelConfig& config, models::RecomputeMode recompute) {
  models::CostOptions o;
  o.micro_batch_size = config.micro_batch;
  // Context parallelism splits the sequence: each rank holds s/cp of every sequence.
  o.seq_length = config.seq_length / config.cp;
  o.tensor_parallel = config.tp;
  o.sequence_parallel = config.sequence_parallel && config.tp > 1;
  o.expert_parallel = config.ep;
  o.flash_attention = config.flash_attention;
  o.recompute = recompute;
  return o;
}

Status check_optimizer_sharding(const models::ModelDesc& model, const ParallelConfig& c) {
  if (c.optimizer != OptimizerRecipe::kInternEvo) return Status::Ok();
  // InternEvo (c628a8c8) shards the optimizer state with HybridZeroOptimizer (parallel.zero1) and
  // everything with zero1.fsdp: torch FSDP within the zero1 group, which launch.py refuses with
  // pipeline parallelism and with experts. Gradients alone it does not shard.
  if (c.zero_stage == 2) {
    return Error{
        "--optimizer internevo shards the optimizer state (zero1, --zero 1) or, with zero1.fsdp, the "
        "weights and gradients too (--zero 3); it has no ZeRO stage 2"};
  }
  if (c.zero_stage == 3 && c.pp > 1) {
    return Error{
        "--optimizer internevo at --zero 3 is InternEvo's zero1.fsdp, which refuses pipeline "
        "parallelism: use --pp 1, or --zero 1 with --pp " +
        num(c.pp)};
  }
  if (c.zero_stage == 3 && model.moe.num_experts > 0) {
    return Error{
        "--optimizer internevo at --zero 3 is InternEvo's zero1.fsdp, which refuses "
        "mixture-of-experts models such as " +
        model.name};
  }
  return Status::Ok();
}

Expected<ParallelConfig> resolve_config(const models::ModelDesc& model, ParallelConfig c) {
  for (auto [value, flag] : {std::pair{c.gpus, "--gpus"},
                             {c.tp, "--tp"},
                             {c.pp, "--pp"},
                             {c.vpp, "--vpp"},
                             {c.cp, "--cp"},
                             {c.ep, "--ep"},
                             {c.micro_batch, "--mbs"}}) {
    if (value < 1) return Error{std::string(flag) + " must be at least 1"};
  }
  // Upper limits far beyond any run so far (the largest jobs have ~10^5 GPUs and train on
  // sequences up to ~10^6 tokens): past them a value is a typo, and the schedule the planner
  // simulates (2 x pp x micro-batches operations) would not fit in memory.
  if (Status s = at_most(c.gpus, kMostGpus, "--gpus"); !s.ok()) return s.error();
  for (auto [value, flag] : {std::pair{c.tp, "--tp"}, {c.pp, "--pp"}, {c.cp, "--cp"}, {c.ep, "--ep"}}) {
    if (value > c.gpus)
      return Error{std::string(flag) + " " + num(value) + " is more than --gpus " + num(c.gpus)};
  }
  if (Status s = at_most(c.vpp, model.num_layers, "--vpp"); !s.ok()) return s.error();
  if (Status s = at_most(c.micro_batch, kMostMicroBatch, "--mbs"); !s.ok()) return s.error();
  if (Status s = at_most(c.global_batch, kMostGlobalBatch, "--gbs"); !s.ok()) return s.error();
  if (Status s = at_most(c.seq_length, kMostSequence, "--seq"); !s.ok()) return s.error();
  if (c.tp * c.pp > c.gpus) {  // each <= gpus <= 2^21: no overflow; checked before multiplying by cp
    return Error{"--tp x --pp = " + num(c.tp * c.pp) + " is more than --gpus " + num(c.gpus)};
  }
  const int64_t model_parallel = c.tp * c.pp * c.cp;
  if (c.gpus % model_parallel != 0) {
    return Error{"--gpus " + num(c.gpus) + " is not a multiple of tp x pp x cp = " + num(model_parallel)};
  }
  if (c.pp > model.num_layers) {
    return Error{"--pp " + num(c.pp) + " is more pipeline stages than the model's " + num(model.num_layers) +
                 " layers"};
  }
  if (c.vpp > 1) {
    if (c.schedule != ScheduleKind::kInterleaved) return Error{"--vpp needs --schedule interleaved"};
    if (c.pp < 2) return Error{"the interleaved schedule needs --pp of at least 2"};
    if (c.chunk_layers.empty() && model.num_layers % (c.pp * c.vpp) != 0) {
      return Error{"--pp " + num(c.pp) + " x --vpp " + num(c.vpp) + " does not divide the model's " +
                   num(model.num_layers) + " layers; give the chunks with --pipeline-layout"};
    }
  } else if (c.schedule == ScheduleKind::kInterleaved) {
    return Error{"--schedule interleaved needs --vpp of at least 2"};
  }
  if (c.vpp_group < 0) return Error{"--vpp-group must be at least 1"};
  if (c.vpp_group > 0 && c.vpp < 2)
    return Error{"--vpp-group needs the interleaved schedule (--vpp of at least 2)"};
  if (c.seq_length == 0) {
    c.seq_length =
        model.max_position_embeddings > 0 ? std::min<int64_t>(model.max_position_embeddings, 4096) : 4096;
  }
  if (c.cp > 1 && !c.flash_attention) {
    // megatron/core/transformer/dot_product_attention.py asserts context_parallel_size == 1:
    // "Context parallelism is only supported by TEDotProductAttention!" (fused attention).
    return Error{
        "--cp needs fused (flash) attention, as Megatron-LM runs context parallelism only through "
        "Transformer Engine's attention; drop --no-flash-attention"};
  }
  if (c.seq_length % c.cp != 0) {
    return Error{"--seq " + num(c.seq_length) + " is not divisible by --cp " + num(c.cp)};
  }
  const int64_t dp = c.dp();
  if (model.moe.num_experts > 0) {
    if (dp % c.ep != 0)
      return Error{"--ep " + num(c.ep) + " does not divide the data-parallel size " + num(dp)};
  } else if (c.ep > 1) {
    return Error{"--ep applies to mixture-of-experts models; " + model.name + " has no experts"};
  }
  if (const char* whose = dense_decoder_kernels(c.framework); whose != nullptr && model.moe.num_experts > 0) {
    return Error{"--framework " + std::string(to_string(c.framework)) + " prices a dense decoder (" + whose +
                 "); " + model.name + " has mixture-of-experts layers"};
  }
  if (c.global_batch == 0) c.global_batch = c.micro_batch * dp * c.pp;
  if (c.global_batch % (c.micro_batch * dp) != 0) {
    return Error{"--gbs " + num(c.global_batch) + " is not divisible by --mbs x dp = " + num(c.micro_batch) +
                 " x " + num(dp)};
  }
  if (c.micro_batches() * c.pp * c.vpp > kMostScheduleOps) {
    return Error{"--gbs " + num(c.global_batch) + " gives " + num(c.micro_batches()) +
                 " micro-batches per step; times the " + num(c.pp * c.vpp) +
                 " pipeline chunks that is above the " + num(kMostScheduleOps) +
                 " pipescope simulates; raise --mbs or lower --gbs"};
  }
  if (c.schedule == ScheduleKind::kInterleaved && c.vpp_group == 0 && c.micro_batches() % c.pp != 0) {
    return Error{"the interleaved schedule needs the micro-batch count (" + num(c.micro_batches()) +
                 ") to be a multiple of --pp " + num(c.pp) + ", or --vpp-group"};
  }
  if (c.schedule == ScheduleKind::kInterleaved && c.vpp_group > 0) {
    if (Status s = check_microbatch_group(c.pp, c.micro_batches(), c.vpp_group); !s.ok()) return s.error();
  }
  if (c.zero_stage < 0 || c.zero_stage > 3) return Error{"--zero must be 0, 1, 2 or 3"};
  if (c.optimizer == OptimizerRecipe::kDeepSpeedBf16) {
    // DeepSpeed picks BF16_Optimizer for bf16 with fp32 gradient accumulation at ZeRO stage 0
    // or 1 (engine.py, _do_optimizer_sanity_check) and its ZeRO optimizer above that.
    if (c.zero_stage > 1) {
      return Error{
          "--optimizer deepspeed-bf16 is DeepSpeed's BF16_Optimizer, which runs at ZeRO stage 0 or 1; "
          "for --zero " +
          num(c.zero_stage) + " use --optimizer megatron"};
    }
    if (c.zero_shard > 0)
      return Error{"--optimizer deepspeed-bf16 shards over all data-parallel ranks; drop --zero-shard"};
  }
  if (Status s = check_optimizer_sharding(model, c); !s.ok()) return s.error();
  if (c.zero_shard > 0) {
    if (c.zero_stage == 0) return Error{"--zero-shard needs --zero 1, 2 or 3"};
    if (dp % c.zero_shard != 0) {
      return Error{"--zero-shard " + num(c.zero_shard) + " does not divide the data-parallel size " +
                   num(dp)};
    }
  }
  if (!c.chunk_layers.empty()) {
    if (c.schedule != ScheduleKind::kInterleaved) {
      return Error{
          "per-chunk layers apply to the interleaved schedule; give 1f1b and gpipe splits per stage"};
    }
    if (!c.stage_layers.empty()) return Error{"give the split per stage or per chunk, not both"};
    if (static_cast<int64_t>(c.chunk_layers.size()) != c.pp * c.vpp) {
      return Error{"--pipeline-layout has " + num(static_cast<int64_t>(c.chunk_layers.size())) +
                   " chunks; --pp " + num(c.pp) + " x --vpp " + num(c.vpp) + " needs " + num(c.pp * c.vpp)};
    }
    int64_t total = 0;
    for (int64_t layers : c.chunk_layers) total += layers;
    if (total != model.num_layers) {
      return Error{"--pipeline-layout has " + num(total) + " decoder layers (t); the model has " +
                   num(model.num_layers)};
    }
  }
  if (!c.stage_layers.empty()) {
    if (static_cast<int64_t>(c.stage_layers.size()) != c.pp) {
      return Error{"--split names " + num(static_cast<int64_t>(c.stage_layers.size())) +
                   " stages but --pp is " + num(c.pp)};
    }
    if (c.schedule == ScheduleKind::kInterleaved)
      return Error{"--split applies to the 1f1b and gpipe schedules"};
    int64_t total = 0;
    for (int64_t layers : c.stage_layers) {
      if (layers < 0) return Error{"--split: a stage cannot have a negative number of layers"};
      total += layers;
    }
    if (total != model.num_layers) {
      return Error{"--split adds up to " + num(total) + " layers; the model has " + num(model.num_layers)};
    }
  }
  if (c.sequence_parallel && c.tp == 1) return Error{"--sequence-parallel needs --tp of at least 2"};
  if (Status s = models::check_cost_options(model, cost_options(c, models::RecomputeMode::kNone)); !s.ok()) {
    return s.error();
  }
  return c;
}

std::string describe(const ParallelConfig& c) {
  std::string text = "tp " + num(c.tp) + ", pp " + num(c.pp);
  if (c.vpp > 1) {
    text += " (vpp " + num(c.vpp);
    if (c.vpp_group > 0 && c.vpp_group != c.pp) text += ", groups of " + num(c.vpp_group) + " micro-batches";
    text += ")";
  }
  if (c.cp > 1) text += ", cp " + num(c.cp);
  if (c.ep > 1) text += ", ep " + num(c.ep);
  text += ", dp " + num(c.dp()) + ", mbs " + num(c.micro_batch) + ", gbs " + num(c.global_batch) + ", seq " +
          num(c.seq_length);
  if (c.zero_stage > 0) {
    text += ", zero " + num(c.zero_stage);
    if (c.zero_shard > 0) text += " (shard " + num(c.zero_shard) + ")";
  }
  if (c.framework != TrainingFramework::kGeneric)
    text += ", framework " + std::string(to_string(c.framework));
  if (c.grad_sync != GradSync::kFrameworkDefault)
    text += ", gradient sync " + std::string(to_string(c.grad_sync));
  if (c.optimizer != OptimizerRecipe::kMegatron) text += ", optimizer " + std::string(to_string(c.optimizer));
  text += ", recompute " + std::string(to_string(c.recompute));
  if (c.sequence_parallel) text += ", sequence parallel";
  text += ", " + std::string(to_string(c.schedule));
  return text;
}

}  // namespace pipescope::planner
