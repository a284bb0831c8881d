#include "pipescope/planner/cost_model.h"

#include <algorithm>
#include <cmath>

#include "pipescope/models/activation_memory.h"
#include "pipescope/models/parameter_count.h"

namespace pipescope::planner {
namespace {

using models::CostOptions;
using models::ModelDesc;
using models::RecomputeMode;

constexpr double kHalf = 2;   // bytes of a bf16 element
constexpr double kFloat = 4;  // bytes of an fp32 element
// Adam step traffic per parameter: fp32 master, m and v read and written (24), the fp32
// gradient read (4), the bf16 weight written (2).
constexpr double kAdamBytesPerParameter = 30;
// FlashAttention's FLOP count for the backward pass is 2.5x the forward (Dao 2023, section 4.1).
constexpr double kAttentionBackwardFlopRatio = 2.5;

using Pass = PassWork;
constexpr WorkKind kGemm = WorkKind::kGemm;
constexpr WorkKind kAttention = WorkKind::kAttention;
constexpr WorkKind kMemoryBound = WorkKind::kMemoryBound;
constexpr WorkKind kCommunication = WorkKind::kCommunication;

Pass pass_of(WorkKind kind, double forward_s, double backward_s) {
  Pass pass;
  pass.forward[kind] = forward_s;
  pass.backward[kind] = backward_s;
  return pass;
}

Pass scaled(Pass pass, double factor) {
  for (WorkTimes* times : {&pass.forward, &pass.backward})
    for (double& s : times->s) s *= factor;
  return pass;
}

class Pricer {
 public:
  explicit Pricer(const PlanInputs& in) : in_(in), gpu_(in.cluster.gpu), c_(in.config) {}

  double gemm_s(double m, double n, double k) const {
    if (m < 1 || n < 1 || k < 1) return 0;
    const double efficiency = in_.profile.gemm_efficiency(llround(m), llround(n), llround(k));
    return 2 * m * n * k / (gpu_.peak_dense_bf16_flops_per_s * efficiency);
  }

  // y = x W for `tokens` rows, W in x out: the forward GEMM, and in backward the input
  // gradient (tokens x out times out x in) and the weight gradient (in x tokens times tokens x out).
  Pass linear(double tokens, double out, double in) const {
    return pass_of(kGemm, gemm_s(tokens, out, in), gemm_s(tokens, in, out) + gemm_s(in, out, tokens));
  }

  double memory_s(double bytes) const { return bytes / in_.profile.memory_bound_bytes_per_s(gpu_); }

  // A collective over `ranks` ranks placed `stride` apart in the rank order (Megatron's: TP
  // fastest, then CP, DP, PP). It stays on NVLink when the group fits in one node. Otherwise every
  // GPU of a node runs the same collective at once, one group per rank in the stride, and the
  // groups share the node's NICs: a group with k members on each node gets k / gpus_per_node of
  // them, since NCCL spreads one group's rings over every NIC its node members reach (the
  // profile's inter-node source: 8 GPUs per node in one group reached 94 % of the node's NIC
  // bandwidth as bus bandwidth).
  double collective_s(CollectiveKind kind, double bytes, int64_t ranks, int64_t stride) const {
    if (ranks <= 1 || bytes <= 0) return 0;
    const int64_t per_node = in_.cluster.gpus_per_node;
    const LinkTier tier = tier_of(ranks, stride);
    const bool intra = tier == LinkTier::kIntraNode;
    const int64_t members_per_node = std::clamp<int64_t>(per_node / stride, 1, ranks);
    const double link = intra ? in_.cluster.intra_node_bytes_per_s
                              : in_.cluster.inter_node_bytes_per_s * static_cast<double>(members_per_node) /
                                    static_cast<double>(per_node);
    return in_.profile.collective_time_s(kind, bytes, static_cast<int>(ranks), tier, link);
  }

  // The fixed part of collective_s(): the latency of the profile entry that prices it.
  double collective_latency_s(CollectiveKind kind, double bytes, int64_t ranks, int64_t stride) const {
    return in_.profile.collective_latency_s(kind, bytes, static_cast<int>(ranks), tier_of(ranks, stride));
  }

  LinkTier tier_of(int64_t ranks, int64_t stride) const {
    return ranks * stride <= in_.cluster.gpus_per_node ? LinkTier::kIntraNode : LinkTier::kInterNode;
  }

  Pass attention_core(const CostOptions& o) const {
    const ModelDesc& m = in_.model;
    const double heads = static_cast<double>(m.num_attention_heads) / c_.tp;
    const double b = o.micro_batch_size, q = o.seq_length, kv = c_.seq_length, d = m.head_dim;
    if (c_.flash_attention) {
      // Causal kernels skip the masked half; the profile's efficiency is on this count.
      const double flops = 4 * b * q * kv * d * heads / 2;
      const double peak = gpu_.peak_dense_bf16_flops_per_s;
      return pass_of(
          kAttention,
          flops /
              (peak * in_.profile.attention_efficiency(c_.seq_length, m.head_dim, AttentionPass::kForward)),
          kAttentionBackwardFlopRatio * flops /
              (peak * in_.profile.attention_efficiency(c_.seq_length, m.head_dim, AttentionPass::kBackward)));
    }
    // Unfused: two batched GEMMs, and the s x s scores through softmax (and dropout) in memory.
    const double gemms = 2 * b * heads * gemm_s(q, kv, d);
    const double scores_bytes = b * heads * q * kv * kHalf * (m.attention_dropout > 0 ? 2 : 1);
    return pass_of(kGemm, gemms, 2 * gemms) +=
           pass_of(kMemoryBound, memory_s(2 * scores_bytes), memory_s(3 * scores_bytes));
  }

  // One decoder layer, one micro-batch, without recomputation: compute, memory-bound ops,
  // and the tensor-, context- and expert-parallel communication that sits on its critical path.
  Pass layer(int64_t index, const CostOptions& o, Pass* core) const {
    const ModelDesc& m = in_.model;
    const double t = c_.tp, h = m.hidden_size, d = m.head_dim;
    const double tokens = static_cast<double>(o.micro_batch_size) * o.seq_length;
    const double shard = o.sequence_parallel ? tokens / t : tokens;
    const double q_width = m.num_attention_heads * d / t, kv_width = m.num_kv_heads * d / t;
    const int up_matrices = m.mlp == models::MlpKind::kSwiglu ? 2 : 1;
    Pass pass;
    pass += linear(tokens, q_width + 2 * kv_width, h);  // Q, K, V
    pass += linear(tokens, h, q_width);                 // output projection
    double activation_width = 0;                        // elements per token through GELU / SwiGLU
    if (!m.is_moe_layer(index)) {
      const double f = m.ffn_hidden_size / t;
      pass += linear(tokens, up_matrices * f, h);
      pass += linear(tokens, h, f);
      activation_width = tokens * f;
    } else {
      const models::MoeDesc& e = m.moe;
      const double f = e.expert_ffn_hidden_size / t;
      const double local_experts = static_cast<double>(e.num_experts) / c_.ep;
      const double rows = tokens * e.top_k / local_experts;  // balanced routing: rows per local expert
      Pass expert = linear(rows, up_matrices * f, h);
      expert += linear(rows, h, f);
      pass += scaled(expert, local_experts);
      pass += linear(shard, e.num_experts, h);  // router
      activation_width = tokens * e.top_k * f;
      if (e.num_shared_experts > 0) {
        const double fs = static_cast<double>(e.num_shared_experts) * e.shared_expert_ffn_hidden_size / t;
        pass += linear(tokens, up_matrices * fs, h);
        pass += linear(tokens, h, fs);
        activation_width += tokens * fs;
      }
      // Token dispatch and combine: two all-to-alls each way over the expert-parallel group.
      const double routed_bytes = tokens * e.top_k * h * kHalf;
      const double a2a = collective_s(CollectiveKind::kAllToAll, routed_bytes, c_.ep, c_.tp * c_.cp);
      pass += pass_of(kCommunication, 2 * a2a, 2 * a2a);
    }
    *core = attention_core(o);
    pass += *core;

    // Elementwise traffic, read + write: two norms, two residual adds (two reads, one write),
    // rotary on Q and K, the MLP activation (SwiGLU reads two inputs), dropout with its mask.
    double bytes = 2 * 2 * shard * h * kHalf + 2 * 3 * shard * h * kHalf;
    if (m.position == models::PositionKind::kRope) bytes += 2 * tokens * (q_width + kv_width) * kHalf;
    bytes += (up_matrices + 1) * activation_width * kHalf;
    if (m.hidden_dropout > 0) bytes += 2 * 2.5 * shard * h * kHalf;
    pass += pass_of(kMemoryBound, memory_s(bytes),
                    memory_s(2 * bytes));  // backward touches each tensor about twice

    // Megatron's TP: two all-reduces per layer each way, or with sequence parallelism an
    // all-gather and a reduce-scatter in their place (Korthikanti et al. 2022, section 4.2.2).
    const double activation_bytes = tokens * h * kHalf;
    double tp_s = 0;
    if (o.sequence_parallel) {
      tp_s = 2 * (collective_s(CollectiveKind::kAllGather, activation_bytes, c_.tp, 1) +
                  collective_s(CollectiveKind::kReduceScatter, activation_bytes, c_.tp, 1));
    } else {
      tp_s = 2 * collective_s(CollectiveKind::kAllReduce, activation_bytes, c_.tp, 1);
    }
    pass += pass_of(kCommunication, tp_s, tp_s);

    // Context parallelism passes K and V around a ring of cp ranks, overlapped with the
    // attention core (ring attention); only what the core cannot hide is exposed.
    if (c_.cp > 1) {
      const double kv_bytes = 2 * o.micro_batch_size * o.seq_length * kv_width * kHalf;
      const double ring_s = (c_.cp - 1) * collective_s(CollectiveKind::kSendRecv, kv_bytes, 2, c_.tp);
      pass += pass_of(kCommunication, std::max(0.0, ring_s - core->forward.total_s()),
                      std::max(0.0, 2 * ring_s - core->backward.total_s()));
    }
    return pass;
  }

  Pass embedding(const CostOptions& o) const {
    const double tokens = static_cast<double>(o.micro_batch_size) * o.seq_length;
    const double h = in_.model.hidden_size, bytes = tokens * h * kHalf;
    Pass pass = pass_of(kMemoryBound, memory_s(2 * bytes),
                        memory_s(3 * bytes));  // gather rows; scatter-add their gradients
    // The vocabulary-parallel embedding sums the TP ranks' partial lookups.
    if (o.sequence_parallel) {
      pass += pass_of(kCommunication, collective_s(CollectiveKind::kReduceScatter, bytes, c_.tp, 1),
                      collective_s(CollectiveKind::kAllGather, bytes, c_.tp, 1));
    } else {
      pass.forward[kCommunication] += collective_s(CollectiveKind::kAllReduce, bytes, c_.tp, 1);
    }
    return pass;
  }

  Pass head(const CostOptions& o) const {
    const double tokens = static_cast<double>(o.micro_batch_size) * o.seq_length;
    const double h = in_.model.hidden_size;
    const double shard = o.sequence_parallel ? tokens / c_.tp : tokens;
    const double vocab = static_cast<double>(models::padded_vocab_size(in_.model, o)) / c_.tp;
    Pass pass = linear(tokens, vocab, h);
    const double norm_bytes = 2 * shard * h * kHalf;
    const double logits_bytes = tokens * vocab * kFloat;  // cross entropy works on fp32 logits
    pass += pass_of(kMemoryBound, memory_s(norm_bytes + 4 * logits_bytes),
                    memory_s(2 * norm_bytes + 2 * logits_bytes));
    if (o.sequence_parallel) {
      const double bytes = tokens * h * kHalf;
      pass += pass_of(kCommunication, collective_s(CollectiveKind::kAllGather, bytes, c_.tp, 1),
                      collective_s(CollectiveKind::kReduceScatter, bytes, c_.tp, 1));
    }
    // Vocabulary-parallel cross entropy all-reduces the max, the sum and the target logit.
    pass.forward[kCommunication] += 3 * collective_s(CollectiveKind::kAllReduce, tokens * kFloat, c_.tp, 1);
    return pass;
  }

  // Static bytes of `params` parameters whose ZeRO shard group has `group` ranks.
  int64_t static_bytes(double params, int64_t group) const {
    const int z = c_.zero_stage;
    const double g = static_cast<double>(group);
    switch (c_.optimizer) {
      case OptimizerRecipe::kDeepSpeedBf16:
        // BF16_Optimizer: bf16 weights and autograd's bf16 gradients (freed only before the next
        // backward), the unsharded fp32 gradient buffer, fp32 master weights and Adam's moments
        // sharded over the group.
        return llround(params * (kHalf + kHalf + kFloat + 3 * kFloat / g));
      case OptimizerRecipe::kInternEvo:
        // HybridZeroOptimizer: bf16 weights and gradients; fp32 master weights and Adam's moments
        // for the rank's shard of its zero1 group (none sharded at ZeRO 0: zero1 size 1).
        return llround(params * (kHalf + kHalf + 3 * kFloat / (z >= 1 ? g : 1)));
      case OptimizerRecipe::kMegatron: break;
    }
    return llround(params *
                   (kHalf / (z >= 3 ? g : 1) + kFloat / (z >= 2 ? g : 1) + 3 * kFloat / (z >= 1 ? g : 1)));
  }

  bool recipe_is(OptimizerRecipe recipe) const { return c_.optimizer == recipe; }

  // Gradient accumulation outside the GEMMs, per micro-batch. BF16_Optimizer adds each
  // micro-batch's bf16 gradients into the fp32 buffer after its backward (update_hp_grads): read
  // 2 + 4 bytes, write 4, per parameter. InternEvo's layers leave it to autograd, which adds each
  // micro-batch's bf16 weight gradient into .grad after the first (read 2 + 2, write 2): spread
  // over the m micro-batches as (m - 1) / m of that. Megatron accumulates into its fp32 main
  // gradients inside the weight-gradient GEMM.
  double gradient_accumulation_s(double params) const {
    if (recipe_is(OptimizerRecipe::kDeepSpeedBf16)) return memory_s(params * (kHalf + 2 * kFloat));
    if (recipe_is(OptimizerRecipe::kInternEvo)) {
      const double m = static_cast<double>(c_.micro_batches());
      return memory_s(params * 3 * kHalf) * (m - 1) / m;
    }
    return 0;
  }

  // Gradient sync (and ZeRO's parameter all-gather) of `params` once per iteration, over a data-
  // parallel group of `dp` ranks sharded in groups of `group`.
  double dp_sync_s(double params, int64_t dp, int64_t group) const {
    const int64_t stride = c_.tp * c_.cp;
    const double grad_bytes = params * kFloat;
    if (recipe_is(OptimizerRecipe::kInternEvo)) {
      // bf16 gradients all-reduced over all of data parallelism during the last backward
      // (overlap_sync_grad); the weight broadcast follows the step (optimizer_s).
      return collective_s(CollectiveKind::kAllReduce, params * kHalf, dp, stride);
    }
    if (recipe_is(OptimizerRecipe::kDeepSpeedBf16)) {
      // The fp32 gradients are cast to bf16 (read 4, write 2), all-reduced whole, and copied back
      // (read 2, write 4); each rank steps its shard and the bf16 weights are all-gathered
      // (update_lp_params).
      return memory_s(params * 2 * (kHalf + kFloat)) +
             collective_s(CollectiveKind::kAllReduce, params * kHalf, dp, stride) +
             collective_s(CollectiveKind::kAllGather, params * kHalf, dp, stride);
    }
    if (c_.zero_stage == 0) return collective_s(CollectiveKind::kAllReduce, grad_bytes, dp, stride);
    double s = 0;
    if (c_.zero_stage < 3) {
      s += collective_s(CollectiveKind::kReduceScatter, grad_bytes, group, stride) +
           collective_s(CollectiveKind::kAllGather, params * kHalf, group, stride);
    }
    // Hierarchical ZeRO: the shard groups then all-reduce their gradient slices with each other.
    if (group < dp)
      s += collective_s(CollectiveKind::kAllReduce, grad_bytes / group, dp / group, stride * group);
    return s;
  }

  // ZeRO-3 gathers a layer's weights before its forward and its backward, and reduce-scatters
  // its gradients after the backward, every micro-batch; prefetching hides it behind compute.
  Pass zero3_exposed(double params, int64_t group, const Pass& compute) const {
    if (c_.zero_stage < 3) return {};
    const int64_t stride = c_.tp * c_.cp;
    const double gather = collective_s(CollectiveKind::kAllGather, params * kHalf, group, stride);
    const double scatter = collective_s(CollectiveKind::kReduceScatter, params * kFloat, group, stride);
    return pass_of(kCommunication, std::max(0.0, gather - compute.forward.total_s()),
                   std::max(0.0, gather + scatter - compute.backward.total_s()));
  }

  // The optimizer step on the rank's shard; InternEvo's step() also broadcasts the updated
  // weights, after the update and before the next forward.
  double optimizer_s(double params, int64_t group) const {
    const bool sharded = c_.zero_stage >= 1 || recipe_is(OptimizerRecipe::kDeepSpeedBf16);
    const double share = sharded ? params / static_cast<double>(group) : params;
    if (!recipe_is(OptimizerRecipe::kInternEvo)) return memory_s(share * kAdamBytesPerParameter);
    // HybridZeroOptimizer first flattens the shard's bf16 gradients (read 2, write 2) and casts
    // them to fp32 (read 2, write 4).
    constexpr double kFlattenAndCastBytes = 10;
    const double step_s = memory_s(share * (kAdamBytesPerParameter + kFlattenAndCastBytes));
    if (!broadcasts_shards(group)) return step_s;
    const double bytes = broadcast_as_all_gather_bytes(params, group);
    const double one_s = collective_s(CollectiveKind::kAllGather, bytes, group, c_.tp * c_.cp) -
                         collective_latency_s(CollectiveKind::kAllGather, bytes, group, c_.tp * c_.cp);
    return step_s + static_cast<double>(group) * one_s;
  }

  // InternEvo's step() ends with each of the zero1 group's g ranks broadcasting its shard of the
  // bf16 weights to the group, one broadcast after another on the group's communicator: g
  // latencies per stage, whatever its parameters (optimizer_s has their bandwidth).
  double shard_broadcast_latencies_s(double stage_params, int64_t group) const {
    if (!broadcasts_shards(group)) return 0;
    const double bytes = broadcast_as_all_gather_bytes(stage_params, group);
    return static_cast<double>(group) *
           collective_latency_s(CollectiveKind::kAllGather, bytes, group, c_.tp * c_.cp);
  }

  // The optimizer step's working memory for `params` parameters (cost_model.h).
  int64_t step_bytes(double params, int64_t group) const {
    switch (c_.optimizer) {
      case OptimizerRecipe::kDeepSpeedBf16: return llround(params * kHalf);
      case OptimizerRecipe::kInternEvo: {
        const double g = c_.zero_stage >= 1 ? static_cast<double>(group) : 1.0;
        return llround(params / g * (kHalf + kFloat));
      }
      case OptimizerRecipe::kMegatron: break;
    }
    return 0;
  }

  // BF16_Optimizer's update_hp_grads adds each bf16 gradient into the fp32 buffer after every
  // backward, hp_grad.add_(lp.grad.to(float32)): a temporary fp32 copy of one parameter's gradient
  // at a time, so the unit's largest weight tensor sets its size. Working memory of the pipeline
  // phase, like a recomputed layer's.
  int64_t gradient_cast_bytes(double largest_tensor) const {
    return recipe_is(OptimizerRecipe::kDeepSpeedBf16) ? llround(largest_tensor * kFloat) : 0;
  }

  // InternEvo with its optimizer state sharded over a zero1 group of more than one rank.
  bool broadcasts_shards(int64_t group) const {
    return recipe_is(OptimizerRecipe::kInternEvo) && c_.zero_stage >= 1 && group > 1;
  }

  // The profile has no broadcast entry: a ring broadcast of b bytes sends b over every link of the
  // ring, as a ring all-gather of b g / (g - 1) bytes does, so each shard's broadcast (b = 2
  // bytes per parameter / g) is priced as that all-gather.
  static double broadcast_as_all_gather_bytes(double params, int64_t group) {
    const double g = static_cast<double>(group);
    return params * kHalf / (g - 1);
  }

 private:
  const PlanInputs& in_;
  const Gpu& gpu_;
  const ParallelConfig& c_;
};

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
  model.fixed_bytes = llround(overheads.cuda_context_bytes.value +
                              communicators * overheads.nccl_buffer_bytes_per_communicator.value);

  const double tokens = static_cast<double>(c.micro_batch) * (c.seq_length / c.cp);
  const double p2p_bytes = tokens * m.hidden_size * kHalf / (base.sequence_parallel ? c.tp : 1);
  model.p2p_s = price.collective_s(CollectiveKind::kSendRecv, p2p_bytes, 2, c.tp * c.cp * dp);

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
  embedding_pass.backward[kMemoryBound] +=
      price.gradient_accumulation_s(static_cast<double>(whole.embedding));
  same_for_all_modes(embedding, embedding_pass, models::embedding_activation_bytes(m, base));
  const double word_embedding =
      static_cast<double>(models::padded_vocab_size(m, base)) / static_cast<double>(c.tp) * m.hidden_size;
  for (UnitOptionCost& option : embedding.by_mode)
    option.transient_bytes = price.gradient_cast_bytes(word_embedding);
  embedding.dp_sync_s = price.dp_sync_s(static_cast<double>(whole.embedding), dp, group);
  embedding.optimizer_s = price.optimizer_s(static_cast<double>(whole.embedding), group);
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
    pass.backward[kMemoryBound] += price.gradient_accumulation_s(static_cast<double>(p.total()));
    const Pass zero3 = price.zero3_exposed(static_cast<double>(p.total()), group, pass);
    pass += zero3;
    const int64_t full_activations = models::layer_activation_bytes(m, layer, base).total_bytes();
    for (size_t i = 0; i < kRecomputeModes.size(); ++i) {
      const RecomputeMode mode = kRecomputeModes[i];
      UnitOptionCost& option = unit.by_mode[i];
      Pass& work = unit.work_by_mode[i];
      work = pass;
      option.activation_bytes = models::layer_activation_bytes(m, layer, options_for(c, mode)).total_bytes();
      if (mode == RecomputeMode::kSelective) {
        work.backward += core.forward;  // the attention core's forward, again
        option.transient_bytes = full_activations - option.activation_bytes;
      } else if (mode == RecomputeMode::kFull) {
        WorkTimes again = pass.forward;  // the whole forward, again; ZeRO-3's gathers are not redone
        again[kCommunication] -= zero3.forward[kCommunication];
        work.backward += again;
        option.transient_bytes = full_activations;  // one layer's activations during its backward
      }
      option.transient_bytes =
          std::max(option.transient_bytes, price.gradient_cast_bytes(largest_layer_tensor(m, layer, c.tp)));
      option.forward_s = work.forward.total_s();
      option.backward_s = work.backward.total_s();
    }
    unit.dp_sync_s =
        price.dp_sync_s(dense_params, dp, group) + price.dp_sync_s(expert_params, expert_dp, expert_group);
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
  head_pass.backward[kMemoryBound] += price.gradient_accumulation_s(static_cast<double>(head.parameters));
  same_for_all_modes(head, head_pass, models::output_activation_bytes(m, base));
  for (UnitOptionCost& option : head.by_mode) {
    option.transient_bytes = models::output_transient_bytes(m, base);
    if (whole.lm_head + tied_copy > 0)
      option.transient_bytes = std::max(option.transient_bytes, price.gradient_cast_bytes(word_embedding));
  }
  head.dp_sync_s = price.dp_sync_s(static_cast<double>(head.parameters), dp, group);
  head.optimizer_s = price.optimizer_s(static_cast<double>(head.parameters), group);
  head.step_bytes = price.step_bytes(static_cast<double>(head.parameters), group);
  model.units.push_back(head);

  double params_total = 0;
  for (const UnitCost& unit : model.units) params_total += static_cast<double>(unit.parameters);
  const double stages = static_cast<double>(c.pp);
  // DeepSpeed's pipeline engine issues ReduceGrads after the last backward (pipe/schedule.py,
  // TrainSchedule: ReduceTiedGrads, ReduceGrads, OptimizerStep at the batch's last step), and its
  // engine without a pipeline all-reduces BF16_Optimizer's gradients after the backward too.
  model.sync_overlaps_backward = c.optimizer != OptimizerRecipe::kDeepSpeedBf16;
  model.step_fixed_s =
      price.shard_broadcast_latencies_s((params_total - expert_params_total) / stages, group) +
      (expert_params_total > 0 ? price.shard_broadcast_latencies_s(expert_params_total / stages, expert_group)
                               : 0);

  switch (c.optimizer) {
    case OptimizerRecipe::kDeepSpeedBf16:
      model.notes.push_back(
          "memory: DeepSpeed BF16_Optimizer: bf16 weights and gradients, unsharded fp32 gradients, "
          "fp32 master weights and Adam state sharded over data parallelism (8 + 12/dp bytes per "
          "parameter); its gradient all-reduce runs on a bf16 copy of the fp32 gradients (2 bytes per "
          "parameter after the last backward), in new allocator segments that stay cached: 'held after "
          "step' is what nvidia-smi shows");
      break;
    case OptimizerRecipe::kInternEvo:
      model.notes.push_back(
          "memory: InternEvo HybridZeroOptimizer: bf16 weights and gradients, fp32 master weights and Adam "
          "state sharded within the zero1 group (4 + 12/g bytes per parameter); bf16 gradients all-reduced "
          "over all data parallelism, each shard's weights broadcast to its group after the step; the step "
          "flattens the shard's gradients and casts them to fp32 (6 bytes per shard parameter, in new "
          "allocator segments that stay cached: 'held after step' is what nvidia-smi shows)");
      break;
    case OptimizerRecipe::kMegatron:
      model.notes.push_back(
          "memory: bf16 weights, fp32 gradients, fp32 Adam state (18 bytes per parameter before ZeRO)");
      break;
  }
  if (c.zero_stage > 0 && group < dp && c.optimizer != OptimizerRecipe::kInternEvo) {
    model.notes.push_back("hierarchical ZeRO: states sharded within groups of " + std::to_string(group) +
                          " data-parallel ranks, gradient slices all-reduced across the groups");
  }
  if (c.flash_attention) model.notes.push_back("attention: fused (flash) kernels, causal");
  return model;
}

const char* work_kind_name(WorkKind kind) {
  switch (kind) {
    case WorkKind::kGemm: return "gemm";
    case WorkKind::kAttention: return "attention";
    case WorkKind::kMemoryBound: return "memory_bound";
    case WorkKind::kCommunication: return "communication";
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
  problem.max_search_work = in.search_work;
  return problem;
}

}  // namespace pipescope::planner
