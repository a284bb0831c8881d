#include "pipescope/planner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "pipescope/models/activation_memory.h"
#include "pipescope/models/parameter_count.h"
#include "pricer.h"

namespace pipescope::planner {
namespace {

// What the profile's training losses add to the table's figures, in a plan's words; the launch
// gaps and PyTorch's kernels where the plan knows the kernels (`knows_the_kernels`). A loss the
// profile carries over from other GPUs (the A100's) is said to be an estimate.
std::string losses_note(const TrainingLosses& l, bool knows_the_kernels, bool unfused_attention) {
  std::vector<std::pair<std::string, bool>> parts;  // each loss's words, and whether measured here
  char text[160];
  auto add = [&](const SourcedValue& value, const SourcedValue& alternative) {
    parts.emplace_back(text, is_measured_source(value.source.empty() ? alternative.source : value.source));
  };
  if (!l.sustained_gemm_fraction.source.empty()) {
    std::snprintf(text, sizeof(text), "GEMMs and attention at %.3f of the table (sustained clocks)",
                  l.sustained_fraction());
    add(l.sustained_gemm_fraction, l.sustained_gemm_fraction);
  }
  if (!l.dgrad_time_ratio.source.empty() || !l.wgrad_time_ratio.source.empty()) {
    std::snprintf(text, sizeof(text), "backward GEMMs in their own layouts (%.3f, %.3f)", l.dgrad_ratio(),
                  l.wgrad_ratio());
    add(l.dgrad_time_ratio, l.wgrad_time_ratio);
  }
  if (!l.overlap_gemm_slowdown.source.empty() || !l.overlap_memory_bound_slowdown.source.empty()) {
    std::snprintf(text, sizeof(text),
                  "compute beside an overlapped collective +%.0f%% (GEMM, attention), +%.0f%% (memory-bound)",
                  100 * l.overlap_gemm_slowdown.value, 100 * l.overlap_memory_bound_slowdown.value);
    add(l.overlap_gemm_slowdown, l.overlap_memory_bound_slowdown);
  }
  if (knows_the_kernels && !l.launch_gap_s.source.empty()) {
    std::snprintf(text, sizeof(text), "%.2f us of GPU time per kernel launched", l.launch_gap_s.value * 1e6);
    add(l.launch_gap_s, l.launch_gap_s);
  }
  if (knows_the_kernels && !l.eager_kernel_fixed_s.source.empty()) {
    std::snprintf(text, sizeof(text), "PyTorch's kernels %.2f us each beyond their bytes",
                  l.eager_kernel_fixed_s.value * 1e6);
    add(l.eager_kernel_fixed_s, l.eager_kernel_fixed_s);
  }
  if (knows_the_kernels && !l.unvectorized_bandwidth_fraction.source.empty()) {
    std::snprintf(text, sizeof(text), "casts and layout copies at %.2f of the memory-bound bandwidth",
                  l.unvectorized_fraction());
    add(l.unvectorized_bandwidth_fraction, l.unvectorized_bandwidth_fraction);
  }
  if (unfused_attention && !l.unfused_scores_forward_fraction.source.empty()) {
    std::snprintf(text, sizeof(text),
                  "unfused attention's s x s scores at %.2f (forward), %.2f (backward) of the memory-bound "
                  "bandwidth",
                  l.unfused_scores_fraction(false), l.unfused_scores_fraction(true));
    add(l.unfused_scores_forward_fraction, l.unfused_scores_backward_fraction);
  }
  if (parts.empty()) return "";
  const auto measured = std::count_if(parts.begin(), parts.end(), [](const auto& p) { return p.second; });
  const bool mixed = measured > 0 && measured < static_cast<std::ptrdiff_t>(parts.size());
  std::string listed;
  for (const auto& [words, here] : parts)
    listed += (listed.empty() ? "" : "; ") + words + (mixed && !here ? " [estimated]" : "");
  if (measured == static_cast<std::ptrdiff_t>(parts.size()))
    return "training losses measured in the profile: " + listed;
  return std::string(mixed
                         ? "training losses in the profile, those marked [estimated] not measured on this GPU"
                         : "training losses estimated in the profile, not measured on this GPU") +
         " (`pipescope calibrate show` gives each source): " + listed;
}

using namespace pricing;  // NOLINT(google-build-using-namespace): this file assembles its prices

CostOptions options_for(const ParallelConfig& c, RecomputeMode mode) { return cost_options(c, mode); }

// Elements of the largest weight tensor of a decoder layer on one rank, in Megatron's layout:
// the fused QKV projection, the output projection, the (SwiGLU: fused gate and up) FFN input
// and the FFN output, of the dense FFN or of one expert.
double largest_layer_tensor(const ModelDesc& m, int64_t layer, int64_t tp) {
  const double h = static_cast<double>(m.hidden_size), t = static_cast<double>(tp);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  double largest = std::max(h * (q + 2 * kv), q * h) / t;
  const double up_matrices = m.mlp == models::MlpKind::kSwiglu ? 2 : 1;
  auto ffn = [&](int64_t f) { largest = std::max(largest, static_cast<double>(f) * h * up_matrices / t); };
  if (m.is_moe_layer(layer)) {
    ffn(m.moe.expert_ffn_hidden_size);
    if (m.moe.num_shared_experts > 0) ffn(m.moe.shared_expert_ffn_hidden_size);
  } else {
    ffn(m.ffn_hidden_size);
  }
  return largest;
}

}  // namespace

Expected<CostModel> build_cost_model(const PlanInputs& in) {
  const ParallelConfig& c = in.config;
  const ModelDesc& m = in.model;
  if (Status s = check_profile_matches(in.profile, in.cluster.gpu); !s.ok()) return s.error();
  const Pricer price(in);
  const CostOptions base = options_for(c, RecomputeMode::kNone);
  const models::ModelParameters whole = models::model_parameters_per_rank(m, base);
  const int64_t dp = c.dp();
  const int64_t group = c.shard_group();
  // Routed experts are data-parallel over dp / ep ranks only (the others hold other experts).
  const int64_t expert_dp = m.moe.num_experts > 0 ? dp / c.ep : dp;
  const int64_t expert_group = std::min(group, expert_dp);

  CostModel model;
  const auto& overheads = in.profile.memory_overheads();
  model.reserve_fraction = overheads.allocator_reserve_fraction.value;
  model.device_bytes = in.cluster.gpu.memory_bytes;
  model.capacity_bytes = llround(static_cast<double>(in.cluster.gpu.memory_bytes) *
                                 (1 - overheads.memory_headroom_fraction.value));
  const int communicators = 1 + (c.tp > 1) + 2 * (c.pp > 1) + (dp > 1) + (c.cp > 1) + (c.ep > 1);
  model.cuda_context_bytes = llround(overheads.cuda_context_bytes.value);
  model.nccl_buffer_bytes = llround(communicators * overheads.nccl_buffer_bytes_per_communicator.value);
  model.fixed_bytes = model.cuda_context_bytes + model.nccl_buffer_bytes;

  model.p2p_s = price.pipeline_p2p_s(base);
  model.p2p_blocks = pipeline_p2p_blocks(c);

  auto same_for_all_modes = [](UnitCost& unit, const Pass& pass, int64_t activation_bytes) {
    for (size_t i = 0; i < kRecomputeModes.size(); ++i) {
      unit.work_by_mode[i] = pass;
      unit.by_mode[i] = {pass.forward.total_s(), pass.backward.total_s(), activation_bytes, 0};
    }
  };

  UnitCost embedding;
  embedding.name = "embedding";
  embedding.parameters = whole.embedding;
  embedding.static_bytes = price.static_bytes(static_cast<double>(whole.embedding), group);
  Pass embedding_pass = price.embedding(base);
  embedding_pass += price.gradient_accumulation(static_cast<double>(whole.embedding), 1);
  same_for_all_modes(embedding, embedding_pass, models::embedding_activation_bytes(m, base));
  const double word_embedding = real(models::padded_vocab_size(m, base)) / real(c.tp) * real(m.hidden_size);
  for (UnitOptionCost& option : embedding.by_mode) {
    option.transient_bytes = price.gradient_cast_bytes(word_embedding) +
                             price.zero3_gathered_bytes(static_cast<double>(whole.embedding));
  }
  // Tied embeddings under pipeline parallelism: the first and the last stage sum their copies'
  // gradients after the backward and before the step (below).
  const double tied_sync_s = m.tied_embeddings && c.pp > 1 ? price.tied_embedding_sync_s(word_embedding) : 0;
  embedding.dp_sync_s = price.dp_sync_s(static_cast<double>(whole.embedding), dp, group);
  embedding.optimizer_s = price.optimizer_s(static_cast<double>(whole.embedding), group) + tied_sync_s;
  embedding.step_bytes = price.step_bytes(static_cast<double>(whole.embedding), group);
  model.units.push_back(embedding);

  double expert_params_total = 0;
  for (int64_t layer = 0; layer < m.num_layers; ++layer) {
    UnitCost unit;
    unit.name = "layer " + std::to_string(layer);
    unit.is_layer = true;
    const models::LayerParameters p = models::layer_parameters_per_rank(m, layer, base);
    const double expert_params = static_cast<double>(p.routed_experts);
    const double dense_params = static_cast<double>(p.total()) - expert_params;
    expert_params_total += expert_params;
    unit.parameters = p.total();
    unit.static_bytes =
        price.static_bytes(dense_params, group) + price.static_bytes(expert_params, expert_group);
    Pass core;
    Pass pass = price.layer(layer, base, &core);
    pass += price.gradient_accumulation(static_cast<double>(p.total()), price.layer_parameter_tensors());
    const Pass zero3 = price.zero3_exposed(static_cast<double>(p.total()), group, pass);
    pass += zero3;
    const int64_t full_activations = models::layer_activation_bytes(m, layer, base).total_bytes();
    const models::LayerBackwardWork backward = models::layer_backward_work_bytes(m, layer, base);
    const Pass checkpointed_norms = price.checkpointed_norms(base);
    for (size_t i = 0; i < kRecomputeModes.size(); ++i) {
      const RecomputeMode mode = kRecomputeModes[i];
      UnitOptionCost& option = unit.by_mode[i];
      Pass& work = unit.work_by_mode[i];
      work = pass;
      option.activation_bytes = models::layer_activation_bytes(m, layer, options_for(c, mode)).total_bytes();
      // Beside its backward's working memory, a layer holds during its backward what it recomputed:
      // the attention core (selective; redone as the attention's backward begins, so not during
      // the MLP's) or the whole layer's activations (full).
      option.transient_bytes = backward.peak_bytes();
      if (mode != RecomputeMode::kFull) work += checkpointed_norms;
      if (mode == RecomputeMode::kSelective) {
        work.backward += core.forward;  // the attention core's forward, again
        option.transient_bytes = std::max(
            full_activations - option.activation_bytes + backward.attention_bytes, backward.mlp_bytes);
      } else if (mode == RecomputeMode::kFull) {
        WorkTimes again = pass.forward;  // the whole forward, again; ZeRO-3's gathers are not redone
        again[kCommunication] -= zero3.forward[kCommunication];
        work.backward += again;
        option.transient_bytes = full_activations + backward.peak_bytes();
      }
      option.transient_bytes =
          std::max(option.transient_bytes, price.gradient_cast_bytes(largest_layer_tensor(m, layer, c.tp))) +
          price.zero3_gathered_bytes(static_cast<double>(p.total()));
      option.forward_s = work.forward.total_s();
      option.backward_s = work.backward.total_s();
    }
    unit.dp_sync_s = price.dp_sync_s(dense_params, dp, group, price.layer_parameter_tensors()) +
                     price.dp_sync_s(expert_params, expert_dp, expert_group);
    unit.optimizer_s =
        price.optimizer_s(dense_params, group) + price.optimizer_s(expert_params, expert_group);
    unit.step_bytes = price.step_bytes(dense_params, group) + price.step_bytes(expert_params, expert_group);
    model.units.push_back(unit);
  }

  UnitCost head;
  head.name = "lm head";
  // Tied embeddings under pipeline parallelism: the last stage keeps its own copy of the word
  // embedding for the logits, synchronized with the first stage's (Megatron-LM).
  const int64_t tied_copy = m.tied_embeddings && c.pp > 1 ? whole.embedding : 0;
  head.parameters = whole.final_norm + whole.lm_head + tied_copy;
  head.static_bytes = price.static_bytes(static_cast<double>(head.parameters), group);
  Pass head_pass = price.head(base);
  head_pass += price.gradient_accumulation(static_cast<double>(head.parameters), tied_copy > 0 ? 3 : 2);
  same_for_all_modes(head, head_pass, models::output_activation_bytes(m, base));
  for (UnitOptionCost& option : head.by_mode) {
    option.transient_bytes = models::output_transient_bytes(m, base);
    if (whole.lm_head + tied_copy > 0)
      option.transient_bytes = std::max(option.transient_bytes, price.gradient_cast_bytes(word_embedding));
    option.transient_bytes += price.zero3_gathered_bytes(static_cast<double>(head.parameters));
  }
  head.dp_sync_s = price.dp_sync_s(static_cast<double>(head.parameters), dp, group, tied_copy > 0 ? 3 : 2);
  head.optimizer_s = price.optimizer_s(static_cast<double>(head.parameters), group) + tied_sync_s;
  head.step_bytes = price.step_bytes(static_cast<double>(head.parameters), group);
  model.units.push_back(head);

  double params_total = 0;
  for (const UnitCost& unit : model.units) params_total += static_cast<double>(unit.parameters);
  const double stages = static_cast<double>(c.pp);
  model.sync_overlaps_backward = sync_overlaps_backward(c);
  // The last backward the sync overlaps is mostly decoder layers': their work's mix prices it.
  if (model.units.size() > 2)
    model.sync_overlap_slowdown = price.overlap_slowdown(model.units[1].work_by_mode[0].backward);
  model.step_fixed_s =
      price.shard_broadcast_latencies_s((params_total - expert_params_total) / stages, group) +
      (expert_params_total > 0 ? price.shard_broadcast_latencies_s(expert_params_total / stages, expert_group)
                               : 0);

  switch (c.optimizer) {
    case OptimizerRecipe::kDeepSpeedBf16:
      model.notes.emplace_back(
          "memory: DeepSpeed BF16_Optimizer: bf16 weights and gradients, unsharded fp32 gradients, "
          "fp32 master weights and Adam state sharded over data parallelism (8 + 12/dp bytes per "
          "parameter); its gradient all-reduce runs on a bf16 copy of the fp32 gradients (2 bytes per "
          "parameter after the last backward), in new allocator segments that stay cached: 'held after "
          "step' is what nvidia-smi shows");
      break;
    case OptimizerRecipe::kInternEvo:
      if (c.zero_stage == 3) {
        model.notes.emplace_back(
            "memory: InternEvo zero1.fsdp: torch FSDP (FULL_SHARD) within the zero1 group, bf16 weights and "
            "gradients, FSDPadaptOptimizer's fp32 weights and Adam state, all sharded (16/g bytes per "
            "parameter); a layer's weights gathered before its forward and backward, its bf16 gradients "
            "reduce-scattered every micro-batch, and (groups smaller than data parallelism) the shards "
            "all-reduced across the groups tensor by tensor in the optimizer step, after the backward");
        break;
      }
      model.notes.emplace_back(
          "memory: InternEvo HybridZeroOptimizer: bf16 weights and gradients, fp32 master weights and Adam "
          "state sharded within the zero1 group (4 + 12/g bytes per parameter); bf16 gradients all-reduced "
          "over all data parallelism, each shard's weights broadcast to its group after the step; the step "
          "flattens the shard's gradients and casts them to fp32 (6 bytes per shard parameter, in new "
          "allocator segments that stay cached: 'held after step' is what nvidia-smi shows)");
      break;
    case OptimizerRecipe::kMegatron:
      model.notes.emplace_back(
          "memory: bf16 weights, fp32 gradients, fp32 Adam state (18 bytes per parameter before ZeRO)");
      break;
  }
  if (c.zero_stage == 3) {
    model.notes.emplace_back(
        "memory: ZeRO-3 gathers a layer's whole bf16 weights for its forward and backward while the next "
        "layer's are gathered, and makes its whole bf16 gradient before reducing it: three bf16 copies of "
        "one layer's weights are counted at the backward's peak");
  }
  if (c.zero_stage > 0 && group < dp && c.optimizer != OptimizerRecipe::kInternEvo) {
    model.notes.emplace_back("hierarchical ZeRO: states sharded within groups of " + std::to_string(group) +
                             " data-parallel ranks, gradient slices all-reduced across the groups");
  }
  if (c.flash_attention) {
    model.notes.emplace_back("attention: fused (flash) kernels, causal");
  } else {
    std::string note =
        "attention: unfused, the whole s x s scores computed (Megatron-LM before flash attention): Q K^T "
        "and P V as batched GEMMs, priced as one GEMM of all their rows, and the scores written, read "
        "and rewritten by the GEMMs, softmax and dropout";
    if (m.position == models::PositionKind::kAlibi) {
      note += "; ALiBi's bias copied into the scores for the first GEMM to add (baddbmm, beta != 0)";
    }
    model.notes.push_back(std::move(note));
  }
  if (c.tp > 1) {
    model.notes.emplace_back(
        tensor_parallel_overlaps_backward_gemms(c)
            ? "tensor parallelism: the column-parallel linears' backward collectives beside their GEMMs "
              "(Megatron-LM's asynchronous all-reduce, or with sequence parallelism the reduce-scatter, "
              "beside "
              "the weight gradient, the input's all-gather beside the input gradient); the rest on the "
              "critical path"
            : "tensor parallelism: every collective on the critical path, the backward's too");
  }
  if (c.pp > 1) {
    std::string note = model.p2p_blocks
                           ? "pipeline: each stage waits for its own sends and receives (the framework "
                             "synchronizes on them)"
                           : "pipeline: a transfer between stages delays the stage waiting for it and "
                             "holds neither stage";
    if (pipeline_p2p_scatters(c) && c.tp > 1 && !c.sequence_parallel) {
      note += "; each activation sent as tensor-parallel shards and all-gathered on arrival";
    }
    model.notes.push_back(std::move(note));
  }
  const bool eager = c.framework == TrainingFramework::kPyTorchEager;
  if (eager) {
    model.notes.emplace_back(
        "pytorch-eager: memory-bound work as eager PyTorch's own kernels (examples/llama_train_step.py: "
        "unfused rotary and SwiGLU, an fp32 SwiGLU backward, fp32 cross entropy), main gradients added by "
        "hooks after every micro-batch, fused Adam with its bf16 copy and gradient zeroing; each kernel "
        "launched costs the profile's launch gap, where measured");
  }
  if (c.framework == TrainingFramework::kInternLM2023) {
    model.notes.emplace_back(
        "internlm-2023: memory-bound work as InternLM's own kernels at 20fe5ac (the residual stream cast "
        "to fp32 before each RMSNorm, eager SiLU and product, flash-attn's rotary and cross entropy, the "
        "dropout-and-norm functions run again in the backward unless the layer is recomputed whole); each "
        "kernel launched costs the profile's launch gap, where measured");
  }
  if (const std::string losses =
          losses_note(in.profile.losses, price.knows_the_kernels(), !c.flash_attention);
      !losses.empty()) {
    model.notes.emplace_back(losses);
  }
  // What reading the model's description assumed (config.json fields left out, sliding windows).
  for (const std::string& note : in.model.notes) model.notes.emplace_back("model: " + note);
  return model;
}

double overlap_slowdown(const WorkTimes& work, const TrainingLosses& losses) {
  const double tensor_core = work[WorkKind::kGemm] + work[WorkKind::kAttention];
  const double memory = work[WorkKind::kMemoryBound];
  if (tensor_core + memory <= 0) return 0;
  return (tensor_core * losses.overlap_gemm_slowdown.value +
          memory * losses.overlap_memory_bound_slowdown.value) /
         (tensor_core + memory);
}

const char* work_kind_name(WorkKind kind) {
  switch (kind) {
    case WorkKind::kGemm: return "gemm";
    case WorkKind::kAttention: return "attention";
    case WorkKind::kMemoryBound: return "memory_bound";
    case WorkKind::kCommunication: return "communication";
    case WorkKind::kLaunchGap: return "launch_gap";
  }
  return "?";
}

StageMemory stage_memory(const CostModel& costs, int64_t static_bytes, int64_t pipeline_bytes,
                         int64_t step_bytes) {
  const double scale = 1 + costs.reserve_fraction;
  StageMemory m;
  m.allocated_bytes = stage_memory_bytes(static_bytes, pipeline_bytes, step_bytes);
  m.peak_memory_bytes = llround(static_cast<double>(m.allocated_bytes) * scale) + costs.fixed_bytes;
  const int64_t held =
      llround(static_cast<double>(static_bytes + pipeline_bytes) * scale) + costs.fixed_bytes + step_bytes;
  m.reserved_bytes = std::max(m.peak_memory_bytes,
                              step_bytes > 0 ? std::min(held, costs.device_bytes) : m.peak_memory_bytes);
  return m;
}

void StageUnitTotals::add_unit(const CostModel& costs, int unit, int option) {
  const UnitCost& u = costs.units[static_cast<size_t>(unit)];
  const UnitOptionCost& cost = u.by_mode[static_cast<size_t>(option)];
  layers += u.is_layer ? 1 : 0;
  full_recompute_layers += u.is_layer && option == kFullRecomputeOption ? 1 : 0;
  has_embedding = has_embedding || unit == 0;
  has_head = has_head || unit + 1 == static_cast<int>(costs.units.size());
  parameters += u.parameters;
  static_bytes += u.static_bytes;
  step_bytes += u.step_bytes;
  activation_bytes += cost.activation_bytes;
  transient_bytes = std::max(transient_bytes, cost.transient_bytes);
  work += u.work_by_mode[static_cast<size_t>(option)];
  dp_sync_s += u.dp_sync_s;
  optimizer_s += u.optimizer_s;
}

StageUnitTotals& StageUnitTotals::operator+=(const StageUnitTotals& chunk) {
  layers += chunk.layers;
  has_embedding = has_embedding || chunk.has_embedding;
  has_head = has_head || chunk.has_head;
  full_recompute_layers += chunk.full_recompute_layers;
  parameters += chunk.parameters;
  static_bytes += chunk.static_bytes;
  step_bytes += chunk.step_bytes;
  activation_bytes += chunk.activation_bytes;
  transient_bytes = std::max(transient_bytes, chunk.transient_bytes);
  work += chunk.work;
  dp_sync_s += chunk.dp_sync_s;
  optimizer_s += chunk.optimizer_s;
  return *this;
}

StageUnitTotals stage_unit_totals(const CostModel& costs, const StagePlan& stage) {
  constexpr int kNone = 0;
  StageUnitTotals totals;
  for (int u = stage.first_unit; u < stage.end_unit; ++u) {
    const bool runs_stage_option = stage.partial_units == 0 || u < stage.first_unit + stage.partial_units;
    totals.add_unit(costs, u, runs_stage_option ? stage.option : kNone);
  }
  return totals;
}

PartitionProblem partition_problem(const PlanInputs& in, const CostModel& costs) {
  const ParallelConfig& c = in.config;
  const double scale = 1 + costs.reserve_fraction;
  PartitionProblem problem;
  for (const UnitCost& unit : costs.units) {
    PartitionUnit u;
    u.name = unit.name;
    u.static_bytes = llround(static_cast<double>(unit.static_bytes) * scale);
    u.step_bytes = llround(static_cast<double>(unit.step_bytes) * scale);
    for (const UnitOptionCost& option : unit.by_mode) {
      UnitOptionCost scaled = option;
      scaled.activation_bytes = llround(static_cast<double>(option.activation_bytes) * scale);
      scaled.transient_bytes = llround(static_cast<double>(option.transient_bytes) * scale);
      u.options.push_back(scaled);
    }
    problem.units.push_back(std::move(u));
  }
  problem.schedule = c.schedule == ScheduleKind::kGPipe ? ScheduleKind::kGPipe : ScheduleKind::kOneFOneB;
  problem.stages = static_cast<int>(c.pp);
  problem.micro_batches = static_cast<int>(c.micro_batches());
  problem.stage_extra_bytes.assign(static_cast<size_t>(c.pp), costs.fixed_bytes);
  problem.capacity_bytes = costs.capacity_bytes;
  problem.p2p_forward_s = costs.p2p_s;
  problem.p2p_backward_s = costs.p2p_s;
  problem.p2p_blocks = costs.p2p_blocks;
  switch (c.recompute) {
    case RecomputeChoice::kNone: problem.allowed_options = {0}; break;
    case RecomputeChoice::kSelective: problem.allowed_options = {1}; break;
    case RecomputeChoice::kFull: problem.allowed_options = {2}; break;
    case RecomputeChoice::kAuto:
      problem.allowed_options = {};
      // A stage may recompute only its first layers fully and keep all of the others'.
      problem.partial_option = 2;
      problem.partial_base = 0;
      break;
  }
  problem.balance = c.balance == BalanceGoal::kTime ? Balance::kTime : Balance::kMemory;
  problem.bound_at_least_uniform = c.balance == BalanceGoal::kHeadroom;
  problem.max_search_work = in.search_work;
  return problem;
}

}  // namespace pipescope::planner
