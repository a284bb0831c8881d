// What each piece of work costs on one rank, priced from the calibration profile, the cluster and
// the model: GEMMs, the attention core, memory-bound traffic and collectives, each as the kind of
// work it is (WorkKind), and the precision recipes' static memory, gradient sync, optimizer step
// and working memory (cost_model.h describes the recipes). Internal to planner/core:
// build_cost_model() assembles the units of a cost model from it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "element_bytes.h"
#include "pipescope/models/activation_memory.h"
#include "pipescope/models/flop_count.h"
#include "pipescope/models/parameter_count.h"
#include "pipescope/planner/cost_model.h"
#include "pipescope/planner/eager_kernels.h"
#include "pipescope/planner/internlm_kernels.h"

namespace pipescope::planner::pricing {

using models::CostOptions;
using models::ModelDesc;
using models::RecomputeMode;

// Adam step traffic per parameter: fp32 master, m and v read and written (24), the fp32
// gradient read (4), the bf16 weight written (2).
constexpr double kAdamBytesPerParameter = 30;

// The optimizer step's traffic per parameter as Megatron-LM's Float16OptimizerWithFloat16Params
// runs it (megatron/optimizer: the same at de7dc40f of 2021, 2755bcb8 of 2022 and 2d5220a4 of
// 2023) and DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py at 56c522386 of
// 2022): the gradient norm over the fp32 gradients (clip_grad_norm_fp32's multi_tensor_l2norm;
// get_global_norm_of_tensors), apex's FusedAdam on the fp32 master (p, g, m, v read, p, m, v
// written), the copy of the master into the bf16 weights (multi_tensor_scale; update_lp_params)
// and the fp32 gradient buffer zeroed for the next iteration (zero_grad_buffer; clear_hp_grads),
// each kernel's bytes in element_bytes.h. BF16_Optimizer takes the norm over the whole unsharded
// buffer, Megatron-LM over the rank's shard. The clipping's rescale runs only when the norm
// exceeds the clip and is not priced.
// FlashAttention's FLOP count for the backward pass is 2.5x the forward (Dao 2023, section 4.1).
constexpr double kAttentionBackwardFlopRatio = 2.5;

using Pass = PassWork;
constexpr WorkKind kGemm = WorkKind::kGemm;
constexpr WorkKind kAttention = WorkKind::kAttention;
constexpr WorkKind kMemoryBound = WorkKind::kMemoryBound;
constexpr WorkKind kCommunication = WorkKind::kCommunication;
constexpr WorkKind kLaunchGap = WorkKind::kLaunchGap;

// GEMM launches of a dense decoder layer's four linears: one each forward, two each backward.
constexpr double kLayerForwardGemms = 4;
constexpr double kLayerBackwardGemms = 8;
// The fused attention core's launches: the forward kernel; the backward's dO.O sum, its main
// kernel and the dQ conversion (cuDNN's and FlashAttention's backward alike).
constexpr double kFusedAttentionForwardKernels = 1;
constexpr double kFusedAttentionBackwardKernels = 3;

inline double real(int64_t count) { return static_cast<double>(count); }

inline Pass pass_of(WorkKind kind, double forward_s, double backward_s) {
  Pass pass;
  pass.forward[kind] = forward_s;
  pass.backward[kind] = backward_s;
  return pass;
}

inline Pass scaled(Pass pass, double factor) {
  for (WorkTimes* times : {&pass.forward, &pass.backward})
    for (double& s : times->s) s *= factor;
  return pass;
}

class Pricer {
 public:
  explicit Pricer(const PlanInputs& in) : in_(in), gpu_(in.cluster.gpu), c_(in.config) {}

  // The table's efficiency at the clocks a GPU settles at under training's steady load.
  double gemm_s(double m, double n, double k) const {
    if (m < 1 || n < 1 || k < 1) return 0;
    const double efficiency = in_.profile.gemm_efficiency(llround(m), llround(n), llround(k)) * sustained();
    return 2 * m * n * k / (gpu_.peak_dense_bf16_flops_per_s * efficiency);
  }

  // y = x W for `tokens` rows, W in x out: the forward GEMM, and in backward the input
  // gradient (tokens x out times out x in) and the weight gradient (in x tokens times tokens x out),
  // each in its own operand layout (TrainingLosses).
  Pass linear(double tokens, double out, double in) const {
    return pass_of(kGemm, gemm_s(tokens, out, in), dgrad_s(tokens, out, in) + wgrad_s(tokens, out, in));
  }
  double dgrad_s(double tokens, double out, double in) const {
    return gemm_s(tokens, in, out) * in_.profile.losses.dgrad_ratio();
  }
  double wgrad_s(double tokens, double out, double in) const {
    return gemm_s(in, out, tokens) * in_.profile.losses.wgrad_ratio();
  }

  double sustained() const { return in_.profile.losses.sustained_fraction(); }

  double overlap_slowdown(const WorkTimes& work) const {
    return planner::overlap_slowdown(work, in_.profile.losses);
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
    return collective(kind, bytes, ranks, stride).total_s();
  }

  // The fixed part of collective_s(): the latency of what prices it (the profile's entry, or the
  // algorithm and protocol NCCL's tuning model chooses for `bytes` across nodes).
  double collective_latency_s(CollectiveKind kind, double bytes, int64_t ranks, int64_t stride) const {
    return collective(kind, bytes, ranks, stride).latency_s;
  }

  CollectiveTime collective(CollectiveKind kind, double bytes, int64_t ranks, int64_t stride) const {
    if (ranks <= 1 || bytes <= 0) return {};
    const int64_t per_node = in_.cluster.gpus_per_node;
    const LinkTier tier = tier_of(ranks, stride);
    const bool intra = tier == LinkTier::kIntraNode;
    const int64_t members_per_node = std::clamp<int64_t>(per_node / stride, 1, ranks);
    const double link = intra ? in_.cluster.intra_node_bytes_per_s
                              : in_.cluster.inter_node_bytes_per_s * static_cast<double>(members_per_node) /
                                    static_cast<double>(per_node);
    const int64_t nodes = intra ? 1 : (ranks + members_per_node - 1) / members_per_node;
    return in_.profile.collective_cost(kind, bytes, static_cast<int>(ranks), static_cast<int>(nodes), tier,
                                       link);
  }

  // One micro-batch's activation (or its gradient) from a pipeline stage to the next, over the
  // pipeline's stride (TP, CP and DP ranks apart): the whole activation, the 1/tp shard where
  // sequence parallelism or Megatron-LM's scatter-gather splits it, the latter then all-gathered
  // over the tensor-parallel group on arrival (pipeline_p2p_scatters()).
  double pipeline_p2p_s(const CostOptions& base) const {
    const double tokens = real(c_.micro_batch) * real(c_.seq_length / c_.cp);  // cp divides the sequence
    const double bytes = tokens * real(in_.model.hidden_size) * kHalf;
    const int64_t stride = c_.tp * c_.cp * c_.dp();
    const bool scatters = pipeline_p2p_scatters(c_) && c_.tp > 1;
    if (!base.sequence_parallel && !scatters)
      return collective_s(CollectiveKind::kSendRecv, bytes, 2, stride);
    const double shard_s = collective_s(CollectiveKind::kSendRecv, bytes / real(c_.tp), 2, stride);
    if (base.sequence_parallel) return shard_s;
    return shard_s + collective_s(CollectiveKind::kAllGather, bytes, c_.tp, 1);
  }

  LinkTier tier_of(int64_t ranks, int64_t stride) const {
    return ranks * stride <= in_.cluster.gpus_per_node ? LinkTier::kIntraNode : LinkTier::kInterNode;
  }

  Pass attention_core(int64_t layer, const CostOptions& o) const {
    const ModelDesc& m = in_.model;
    const double heads = real(m.num_attention_heads) / real(c_.tp);
    const double b = real(o.micro_batch_size), q = real(o.seq_length), kv = real(c_.seq_length);
    const double d = real(m.head_dim);
    if (c_.flash_attention) {
      // Causal kernels skip the masked half, and blocks outside a sliding window (the share of the
      // whole sequence's causal pairs its window keeps); the profile's efficiency is on this count.
      const int64_t window = m.window_of(layer);
      const double window_share =
          window > 0 ? models::attention_pairs(kv, window, true) / models::attention_pairs(kv, 0, true) : 1.0;
      const double flops = 4 * b * q * kv * d * heads / 2 * window_share;
      const double peak = gpu_.peak_dense_bf16_flops_per_s * sustained();
      Pass fused = pass_of(
          kAttention,
          flops /
              (peak * in_.profile.attention_efficiency(c_.seq_length, m.head_dim, AttentionPass::kForward)),
          kAttentionBackwardFlopRatio * flops /
              (peak * in_.profile.attention_efficiency(c_.seq_length, m.head_dim, AttentionPass::kBackward)));
      if (knows_the_kernels())
        fused += launch_gaps(kFusedAttentionForwardKernels, kFusedAttentionBackwardKernels);
      return fused;
    }
    return unfused_attention_core(b * heads, q, kv, d, m.attention_dropout > 0,
                                  m.position == models::PositionKind::kAlibi);
  }

  // Attention as Megatron-LM ran it before flash attention, over `matrices` (micro-batch x heads)
  // q x kv score matrices of head width d: Q K^T and P V as batched GEMMs, which run as one GEMM of
  // all their rows does (OpenXLA's H100 table: 4 matrices of 1024^3 at 490 TFLOP/s, one 2048 x 2048 x
  // 1024 at 492), and the scores moved through memory at the profile's unfused-attention bandwidth.
  // Each pass's time is its FLOPs plus its bytes, the way the fractions are measured
  // (attention_unfused/ of the calibration suite, scripts/a100-losses.py for the A100).
  Pass unfused_attention_core(double matrices, double q, double kv, double d, bool dropout,
                              bool alibi) const {
    const double flops_per_s = gpu_.peak_dense_bf16_flops_per_s * sustained();
    const double scores_bytes = matrices * q * kv * kHalf;
    const double bytes_per_s = in_.profile.memory_bound_bytes_per_s(gpu_);
    const TrainingLosses& l = in_.profile.losses;
    auto pass = [&](bool backward) {
      const double bias = alibi && !backward ? UnfusedScoreTraffic::kAlibiForward : 0;
      return (UnfusedScoreTraffic::matrices(backward, dropout) + bias) * scores_bytes /
             (bytes_per_s * l.unfused_scores_fraction(backward));
    };
    return pass_of(kGemm, in_.profile.unfused_attention_gemm_s(flops_per_s, matrices, q, kv, d, false),
                   in_.profile.unfused_attention_gemm_s(flops_per_s, matrices, q, kv, d, true)) +=
           pass_of(kMemoryBound, pass(false), pass(true));
  }

  // One decoder layer, one micro-batch, without recomputation: compute, memory-bound ops,
  // and the tensor-, context- and expert-parallel communication that sits on its critical path.
  Pass layer(int64_t index, const CostOptions& o, Pass* core) const {
    const ModelDesc& m = in_.model;
    const double t = real(c_.tp), h = real(m.hidden_size), d = real(m.head_dim);
    const double tokens = real(o.micro_batch_size) * real(o.seq_length);
    const double shard = o.sequence_parallel ? tokens / t : tokens;
    const double q_width = real(m.num_attention_heads) * d / t, kv_width = real(m.num_kv_heads) * d / t;
    const int up_matrices = m.mlp == models::MlpKind::kSwiglu ? 2 : 1;
    Pass pass;
    const double qkv_width = q_width + 2 * kv_width;
    pass += linear(tokens, qkv_width, h);  // Q, K, V
    double up_width = 0;                   // the dense MLP's column-parallel linear; 0 in an MoE layer
    pass += linear(tokens, h, q_width);    // output projection
    double activation_width = 0;           // elements per token through GELU / SwiGLU
    if (!m.is_moe_layer(index)) {
      const double f = real(m.ffn_hidden_size) / t;
      if (internlm2023() && up_matrices == 2) {
        pass += scaled(linear(tokens, f, h), 2);  // InternLM's w1 and w2 are linears of their own
      } else {
        pass += linear(tokens, up_matrices * f, h);
      }
      pass += linear(tokens, h, f);
      activation_width = tokens * f;
      up_width = up_matrices * f;
    } else {
      const models::MoeDesc& e = m.moe;
      const double f = real(e.expert_ffn_hidden_size) / t;
      const double local_experts = real(e.num_experts) / real(c_.ep);
      const double rows = tokens * real(e.top_k) / local_experts;  // balanced routing: rows per local expert
      Pass expert = linear(rows, up_matrices * f, h);
      expert += linear(rows, h, f);
      pass += scaled(expert, local_experts);
      pass += linear(shard, real(e.num_experts), h);  // router
      activation_width = tokens * real(e.top_k) * f;
      if (e.num_shared_experts > 0) {
        const double fs = real(e.num_shared_experts) * real(e.shared_expert_ffn_hidden_size) / t;
        pass += linear(tokens, up_matrices * fs, h);
        pass += linear(tokens, h, fs);
        activation_width += tokens * fs;
      }
      // Token dispatch and combine: two all-to-alls each way over the expert-parallel group.
      const double routed_bytes = tokens * real(e.top_k) * h * kHalf;
      const double a2a = collective_s(CollectiveKind::kAllToAll, routed_bytes, c_.ep, c_.tp * c_.cp);
      pass += pass_of(kCommunication, 2 * a2a, 2 * a2a);
    }
    *core = attention_core(index, o);
    pass += *core;

    if (eager()) {
      pass += eager_layer_kernels(layer_shape(o));
    } else if (internlm2023()) {
      pass += internlm_layer_kernels(layer_shape(o));
    } else {
      // Elementwise traffic, read + write: two norms, two residual adds (two reads, one write),
      // rotary on Q and K, the MLP activation (SwiGLU reads two inputs), dropout with its mask.
      double bytes = 2 * 2 * shard * h * kHalf + 2 * 3 * shard * h * kHalf;
      if (m.position == models::PositionKind::kRope) bytes += 2 * tokens * (q_width + kv_width) * kHalf;
      bytes += (up_matrices + 1) * activation_width * kHalf;
      if (m.hidden_dropout > 0) bytes += 2 * 2.5 * shard * h * kHalf;
      pass += pass_of(kMemoryBound, memory_s(bytes),
                      memory_s(2 * bytes));  // backward touches each tensor about twice
    }

    pass += tensor_parallel_communication(o, {qkv_width, up_width});

    // Context parallelism passes K and V around a ring of cp ranks, overlapped with the
    // attention core (ring attention); only what the core cannot hide is exposed.
    if (c_.cp > 1) {
      const double kv_bytes = 2 * real(o.micro_batch_size) * real(o.seq_length) * kv_width * kHalf;
      const double ring_s = real(c_.cp - 1) * collective_s(CollectiveKind::kSendRecv, kv_bytes, 2, c_.tp);
      pass += pass_of(
          kCommunication, exposed_beside_s(ring_s, core->forward.total_s(), overlap_slowdown(core->forward)),
          exposed_beside_s(2 * ring_s, core->backward.total_s(), overlap_slowdown(core->backward)));
    }
    return pass;
  }

  // The output widths of a layer's two column-parallel linears (Q, K, V and the MLP's up
  // projection; 0 where the MLP is a mixture of experts).
  struct ColumnLinears {
    double qkv_width = 0;
    double up_width = 0;
  };

  // Megatron's TP: two all-reduces per layer each way, or with sequence parallelism an
  // all-gather and a reduce-scatter in their place (Korthikanti et al. 2022, section 4.2.2), each
  // on the critical path, unless the framework overlaps the column-parallel linears' backward
  // collectives with their GEMMs (tensor_parallel_overlaps_backward_gemms): the input gradient's
  // all-reduce (or reduce-scatter) beside the weight-gradient GEMM and, with sequence
  // parallelism, the input's all-gather again beside the input-gradient GEMM.
  Pass tensor_parallel_communication(const CostOptions& o, ColumnLinears columns) const {
    const double tokens = real(o.micro_batch_size) * real(o.seq_length), h = real(in_.model.hidden_size);
    const double activation_bytes = tokens * h * kHalf;
    const double gather_s = collective_s(CollectiveKind::kAllGather, activation_bytes, c_.tp, 1);
    const double scatter_s = collective_s(CollectiveKind::kReduceScatter, activation_bytes, c_.tp, 1);
    const double all_reduce_s = collective_s(CollectiveKind::kAllReduce, activation_bytes, c_.tp, 1);
    const bool sequence_parallel = o.sequence_parallel;
    const double forward_s = sequence_parallel ? 2 * (gather_s + scatter_s) : 2 * all_reduce_s;
    if (!tensor_parallel_overlaps_backward_gemms(c_)) return pass_of(kCommunication, forward_s, forward_s);

    const double gemm_slowdown = in_.profile.losses.overlap_gemm_slowdown.value;
    // The row-parallel linears' output-gradient all-gathers come before their GEMMs.
    double backward_s = sequence_parallel ? 2 * gather_s : 0;
    for (const double width : {columns.qkv_width, columns.up_width}) {
      if (width <= 0) {  // an MoE layer's experts: their collectives as before
        backward_s += sequence_parallel ? gather_s + scatter_s : all_reduce_s;
        continue;
      }
      const double wgrad = wgrad_s(tokens, width, h);
      if (sequence_parallel) {
        backward_s += exposed_beside_s(gather_s, dgrad_s(tokens, width, h), gemm_slowdown) +
                      exposed_beside_s(scatter_s, wgrad, gemm_slowdown);
      } else {
        backward_s += exposed_beside_s(all_reduce_s, wgrad, gemm_slowdown);
      }
    }
    return pass_of(kCommunication, forward_s, backward_s);
  }

  // A dense decoder layer on this rank for one micro-batch: widths divided by TP, the norms and
  // residual adds on the sequence-parallel shard.
  eager::LayerShape layer_shape(const CostOptions& o) const {
    const ModelDesc& m = in_.model;
    const double t = real(c_.tp), d = real(m.head_dim);
    eager::LayerShape shape;
    shape.tokens = real(o.micro_batch_size) * real(o.seq_length);
    shape.norm_tokens = o.sequence_parallel ? shape.tokens / t : shape.tokens;
    shape.hidden = real(m.hidden_size);
    shape.q_width = real(m.num_attention_heads) * d / t;
    shape.kv_width = real(m.num_kv_heads) * d / t;
    shape.ffn_width = real(m.ffn_hidden_size) / t;
    shape.gated_mlp = m.mlp == models::MlpKind::kSwiglu;
    shape.rope = m.position == models::PositionKind::kRope;
    shape.dropout = m.hidden_dropout > 0;
    return shape;
  }

  // A dense decoder layer's kernels between its GEMMs as eager PyTorch launches them, and every
  // launch's gap (the GEMMs' too).
  Pass eager_layer_kernels(const eager::LayerShape& shape) const {
    const eager::PassTraffic traffic = eager::layer(shape);
    Pass pass = memory_bound(traffic);
    pass += launch_gaps(traffic.forward.kernels + kLayerForwardGemms,
                        traffic.backward.kernels + kLayerBackwardGemms);
    return pass;
  }

  // The same for InternLM of 2023 (internlm_kernels.h), whose SwiGLU runs w1 and w2 as two GEMMs.
  Pass internlm_layer_kernels(const eager::LayerShape& shape) const {
    const eager::PassTraffic traffic = internlm2023::layer(shape);
    const double split_up = shape.gated_mlp ? 1 : 0;
    Pass pass = memory_bound(traffic);
    pass += launch_gaps(traffic.forward.kernels + kLayerForwardGemms + split_up,
                        traffic.backward.kernels + kLayerBackwardGemms + 2 * split_up);
    return pass;
  }

  // What a layer's backward runs again beside what its recompute mode redoes: InternLM of 2023
  // checkpoints its dropout-and-norm functions whenever the layer is not recomputed whole.
  Pass checkpointed_norms(const CostOptions& o) const {
    if (!internlm2023()) return {};
    const eager::Traffic again = internlm2023::norm_recompute(layer_shape(o));
    Pass pass = pass_of(kMemoryBound, 0, eager_s(again));
    pass += launch_gaps(0, again.kernels);
    return pass;
  }

  Pass embedding(const CostOptions& o) const {
    const double tokens = real(o.micro_batch_size) * real(o.seq_length);
    const double h = real(in_.model.hidden_size), bytes = tokens * h * kHalf;
    Pass pass;
    if (eager()) {
      const eager::PassTraffic traffic = eager::embedding(tokens, h, vocab_rows(o));
      pass = memory_bound(traffic);
      pass += launch_gaps(traffic.forward.kernels, traffic.backward.kernels);
    } else {
      pass = pass_of(kMemoryBound, memory_s(2 * bytes), memory_s(3 * bytes));  // gather rows; scatter-add
    }
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
    const double tokens = real(o.micro_batch_size) * real(o.seq_length);
    const double h = real(in_.model.hidden_size);
    const double shard = o.sequence_parallel ? tokens / real(c_.tp) : tokens;
    const double vocab = vocab_rows(o);
    Pass pass = linear(tokens, vocab, h);
    if (knows_the_kernels()) {
      const eager::PassTraffic traffic =
          eager() ? eager::head(tokens, shard, h, vocab) : internlm2023::head(tokens, shard, h, vocab);
      pass += memory_bound(traffic);
      pass += launch_gaps(traffic.forward.kernels + 1, traffic.backward.kernels + 2);  // the LM head's GEMMs
    } else {
      const double norm_bytes = 2 * shard * h * kHalf;
      const double logits_bytes = tokens * vocab * kFloat;  // cross entropy works on fp32 logits
      pass += pass_of(kMemoryBound, memory_s(norm_bytes + 4 * logits_bytes),
                      memory_s(2 * norm_bytes + 2 * logits_bytes));
    }
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
        // zero1.fsdp: FSDP's bf16 flat weights and gradients, and FSDPadaptOptimizer's fp32 copy
        // of them with Adam's moments, all for the rank's shard of its zero1 group.
        if (z == 3) return llround(params * (kHalf + kHalf + 3 * kFloat) / g);
        // HybridZeroOptimizer: bf16 weights and gradients; fp32 master weights and Adam's moments
        // for the rank's shard of its zero1 group (none sharded at ZeRO 0: zero1 size 1).
        return llround(params * (kHalf + kHalf + 3 * kFloat / (z >= 1 ? g : 1)));
      case OptimizerRecipe::kMegatron: break;
    }
    return llround(params *
                   (kHalf / (z >= 3 ? g : 1) + kFloat / (z >= 2 ? g : 1) + 3 * kFloat / (z >= 1 ? g : 1)));
  }

  bool recipe_is(OptimizerRecipe recipe) const { return c_.optimizer == recipe; }

  // Eager PyTorch: its memory-bound work is the kernels eager_kernels.h lists, not Megatron-LM's
  // fused ones.
  bool eager() const { return c_.framework == TrainingFramework::kPyTorchEager; }

  // InternLM of 2023: its layers' and loss's kernels are internlm_kernels.h's, the rest Megatron-LM's.
  bool internlm2023() const { return c_.framework == TrainingFramework::kInternLM2023; }

  // Where the planner lists a framework's kernels, each launch costs the profile's launch gap.
  bool knows_the_kernels() const { return eager() || internlm2023(); }

  Pass memory_bound(const eager::PassTraffic& traffic) const {
    return pass_of(kMemoryBound, eager_s(traffic.forward), eager_s(traffic.backward));
  }

  // Listed kernels as the profile measured PyTorch's own (TrainingLosses): their bytes at the
  // memory-bound bandwidth, the unvectorized part at its fraction of it, and each kernel's fixed
  // time. A profile that did not measure them prices bytes alone.
  double eager_s(const eager::Traffic& traffic) const {
    const TrainingLosses& l = in_.profile.losses;
    return memory_s(traffic.bytes - traffic.unvectorized_bytes) +
           memory_s(traffic.unvectorized_bytes) / l.unvectorized_fraction() +
           traffic.kernels * l.eager_kernel_fixed_s.value;
  }

  // The GPU's idle time between kernels, per kernel launched (0 where the profile has not measured
  // it); priced where the planner knows the kernels, as under eager PyTorch.
  double launch_gap_s() const { return in_.profile.losses.launch_gap_s.value; }

  Pass launch_gaps(double forward_kernels, double backward_kernels) const {
    return pass_of(kLaunchGap, forward_kernels * launch_gap_s(), backward_kernels * launch_gap_s());
  }

  // Parameter tensors of a dense decoder layer: the four linears' weights, the two norms' (and
  // LayerNorm's biases), the linears' biases where the model has them.
  double layer_parameter_tensors() const {
    const ModelDesc& m = in_.model;
    const double norms = m.norm == models::NormKind::kLayerNorm ? 4 : 2;
    return 4 + norms + (m.qkv_bias ? 1 : 0) + (m.attention_output_bias ? 1 : 0) + (m.mlp_bias ? 2 : 0);
  }

  // The word embedding's rows on one rank (and the logits' columns).
  double vocab_rows(const CostOptions& o) const {
    return static_cast<double>(models::padded_vocab_size(in_.model, o)) / static_cast<double>(c_.tp);
  }

  // Eager PyTorch running Megatron-LM's recipe as the example does: main-gradient hooks and fused
  // Adam over fp32 masters (eager_kernels.h). An explicit other --optimizer keeps its own pricing.
  bool eager_megatron_step() const { return eager() && recipe_is(OptimizerRecipe::kMegatron); }

  // gradient_accumulation_s() as a backward pass's work, with one hook launch per parameter tensor
  // where the hooks run.
  Pass gradient_accumulation(double params, double tensors) const {
    if (eager_megatron_step()) {
      const eager::Traffic hooks = eager::gradient_hooks(params, tensors);
      Pass pass = pass_of(kMemoryBound, 0, eager_s(hooks));
      pass += launch_gaps(0, hooks.kernels);
      return pass;
    }
    return pass_of(kMemoryBound, 0, gradient_accumulation_s(params));
  }

  // Gradient accumulation outside the GEMMs, per micro-batch. BF16_Optimizer adds each
  // micro-batch's bf16 gradients into the fp32 buffer after its backward (update_hp_grads): read
  // 2 + 4 bytes, write 4, per parameter. InternEvo's layers leave it to autograd, which adds each
  // micro-batch's bf16 weight gradient into .grad after the first (read 2 + 2, write 2): spread
  // over the m micro-batches as (m - 1) / m of that. Megatron accumulates into its fp32 main
  // gradients inside the weight-gradient GEMM; eager PyTorch's hooks, which add every micro-batch's
  // bf16 gradients into them outside it, are priced as its kernels (gradient_accumulation()).
  double gradient_accumulation_s(double params) const {
    if (recipe_is(OptimizerRecipe::kDeepSpeedBf16)) return memory_s(params * (kHalf + 2 * kFloat));
    if (recipe_is(OptimizerRecipe::kInternEvo)) {
      // Under zero1.fsdp, FSDP adds each micro-batch's reduced shard into the sharded gradient.
      const double m = static_cast<double>(c_.micro_batches());
      const double held = c_.zero_stage == 3 ? params / static_cast<double>(c_.shard_group()) : params;
      return memory_s(held * 3 * kHalf) * (m - 1) / m;
    }
    return 0;
  }

  // Gradient sync (and ZeRO's parameter all-gather) of `params` in `tensors` parameter tensors once
  // per iteration, over a data-parallel group of `dp` ranks sharded in groups of `group`.
  double dp_sync_s(double params, int64_t dp, int64_t group, double tensors = 1) const {
    const int64_t stride = c_.tp * c_.cp;
    const double grad_bytes = params * kFloat;
    if (recipe_is(OptimizerRecipe::kInternEvo) && c_.zero_stage == 3) {
      // FSDPadaptOptimizer.step() all-reduces each parameter's bf16 gradient shard across the
      // zero1 groups (ZERO3_DP) and waits for it before the next: one collective per tensor.
      if (group >= dp) return 0;
      const double shard_bytes = params * kHalf / real(group) / tensors;
      return tensors * collective_s(CollectiveKind::kAllReduce, shard_bytes, dp / group, stride * group);
    }
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
      s += collective_s(CollectiveKind::kAllReduce, grad_bytes / real(group), dp / group, stride * group);
    return s;
  }

  // ZeRO-3 gathers a layer's weights before its forward and its backward, and reduce-scatters
  // its gradients after the backward, every micro-batch; prefetching hides it behind compute.
  Pass zero3_exposed(double params, int64_t group, const Pass& compute) const {
    if (c_.zero_stage < 3) return {};
    const int64_t stride = c_.tp * c_.cp;
    const double gather = collective_s(CollectiveKind::kAllGather, params * kHalf, group, stride);
    // InternEvo's FSDP reduces the bf16 gradients; the other recipes keep fp32 gradient shards.
    const double grad_size = recipe_is(OptimizerRecipe::kInternEvo) ? kHalf : kFloat;
    const double scatter = collective_s(CollectiveKind::kReduceScatter, params * grad_size, group, stride);
    return pass_of(
        kCommunication,
        exposed_beside_s(gather, compute.forward.total_s(), overlap_slowdown(compute.forward)),
        exposed_beside_s(gather + scatter, compute.backward.total_s(), overlap_slowdown(compute.backward)));
  }

  // ZeRO-3 materializes a unit's whole weights for its forward and its backward, gathering the
  // next unit's while this one runs (FSDP's prefetch, DeepSpeed's likewise), and the backward
  // makes the unit's whole bf16 gradient before reducing it: three bf16 copies of `params` at the
  // backward's peak, beside its working memory.
  int64_t zero3_gathered_bytes(double params) const {
    return c_.zero_stage < 3 ? 0 : llround(3 * kHalf * params);
  }

  // The optimizer step on the rank's shard; InternEvo's step() also broadcasts the updated
  // weights, after the update and before the next forward.
  double optimizer_s(double params, int64_t group) const {
    const bool sharded = c_.zero_stage >= 1 || recipe_is(OptimizerRecipe::kDeepSpeedBf16);
    const double share = sharded ? params / static_cast<double>(group) : params;
    if (eager_megatron_step()) {
      const eager::Traffic step = eager::optimizer_step(share);
      return eager_s(step) + step.kernels * launch_gap_s();
    }
    if (recipe_is(OptimizerRecipe::kDeepSpeedBf16)) {
      return memory_s(share * (kFusedAdamBytes + kMasterToBf16Bytes) +
                      params * (kGradientNormBytes + kZeroGradientBytes));
    }
    if (recipe_is(OptimizerRecipe::kMegatron)) {
      const double gradient_buffer = c_.zero_stage >= 2 ? share : params;
      return memory_s(share * (kGradientNormBytes + kFusedAdamBytes + kMasterToBf16Bytes) +
                      gradient_buffer * kZeroGradientBytes);
    }
    // HybridZeroOptimizer first flattens the shard's bf16 gradients (read 2, write 2) and casts
    // them to fp32 (read 2, write 4). FSDPadaptOptimizer (zero1.fsdp) casts them (read 2, write
    // 4) and copies the fp32 weights into the bf16 ones after Adam (read 4, write 2, where Adam's
    // own bf16 write is 2): 10 bytes more as well.
    constexpr double kFlattenAndCastBytes = 10;
    const double step_s = memory_s(share * (kAdamBytesPerParameter + kFlattenAndCastBytes));
    if (!broadcasts_shards(group)) return step_s;
    const double bytes = broadcast_as_all_gather_bytes(params, group);
    const double one_s = collective(CollectiveKind::kAllGather, bytes, group, c_.tp * c_.cp).transfer_s;
    return step_s + static_cast<double>(group) * one_s;
  }

  // The all-reduce of a tied word embedding's gradient (`params` of it on this rank) between the
  // first and the last pipeline stage, after the backward and before the step, on its own: Megatron-LM
  // all-reduces the fp32 main gradient (allreduce_word_embedding_grads at 2755bcb8, in train_step at
  // de7dc40f), DeepSpeed's engine BF16_Optimizer's fp32 one (_exec_reduce_tied_grads at 56c522386);
  // InternEvo's gradients are bf16.
  double tied_embedding_sync_s(double params) const {
    const double bytes = params * (recipe_is(OptimizerRecipe::kInternEvo) ? kHalf : kFloat);
    return collective_s(CollectiveKind::kAllReduce, bytes, 2, c_.tp * c_.cp * c_.dp() * (c_.pp - 1));
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
        // zero1.fsdp: the shard's fp32 gradient copies; HybridZeroOptimizer: also its flat bf16 ones.
        return llround(params / g * (c_.zero_stage == 3 ? kFloat : kHalf + kFloat));
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

  // InternEvo's HybridZeroOptimizer with its optimizer state sharded over a zero1 group of more
  // than one rank (zero1.fsdp keeps the weights sharded: nothing to broadcast).
  bool broadcasts_shards(int64_t group) const {
    return recipe_is(OptimizerRecipe::kInternEvo) && c_.zero_stage >= 1 && c_.zero_stage < 3 && group > 1;
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

}  // namespace pipescope::planner::pricing
