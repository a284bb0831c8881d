// Floating-point operations of training, counted the way Megatron-LM's papers count them:
// only matrix multiplies, 2·m·n·k each; norms, softmax, activations and biases are left out.
// For a micro-batch of b sequences of s tokens (T = b·s), h hidden, a heads of d, g K/V heads:
//   Q, K, V projections    2·T·h·(a·d + 2·g·d)
//   attention scores       2·b·a·s·s·d   (Q·K^T)      these two are the "attention core":
//   attention over values  2·b·a·s·s·d   (scores·V)   the full s² is counted, as Narayanan et
//                                                      al. 2021 do; causal kernels skip ~half
//   output projection      2·T·a·d·h
//   MLP                    2·T·h·f per matrix: 2 matrices for GELU, 3 for SwiGLU
//   MoE                    router 2·T·h·E; top_k routed expert MLPs per token; shared experts
//   LM head (logits)       2·T·h·V
// Backward is twice the forward (gradients of inputs and of weights; for the attention core,
// of both operands). With f = 4h and multi-head attention a layer's forward is 24·T·h² +
// 4·T·s·h, which gives Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on
// GPU Clusters Using Megatron-LM", section 5.1) for an iteration with full recomputation:
//   F = 96·B·s·l·h² · (1 + s/(6h) + V/(16·l·h)),
// and without recomputation the model FLOPs of MFU (Korthikanti et al. 2022, section 6; Chowdhery
// et al. 2022 PaLM, appendix B):  72·B·s·l·h² · (1 + s/(6h) + V/(12·l·h)).
#pragma once

#include <cstdint>

#include "pipescope/models/cost_options.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models {

// Forward FLOPs of one decoder layer for one micro-batch on one tensor-parallel rank.
struct LayerFlops {
  double attention_linear = 0;  // Q, K, V and output projections
  double attention_core = 0;    // Q·K^T and scores·V: what selective recomputation redoes
  double mlp = 0;               // dense MLP, or top_k routed experts plus the shared experts
  double router = 0;            // MoE gate, replicated over TP ranks (on the sequence shard under SP)
  double forward() const { return attention_linear + attention_core + mlp + router; }
  double backward() const { return 2 * forward(); }
};

// Query-key pairs of one head's attention over one sequence of s tokens with a window of `window`
// tokens (0: none). `causal` false: s x min(s, window), the model-FLOPs convention (the full s x s
// without a window); true: what a causal kernel computes, s^2/2 without a window and
// s*w - w^2/2 with one (each query attends to at most w keys).
double attention_pairs(double s, int64_t window, bool causal);

// Experts: tokens are assumed spread evenly, so each expert-parallel rank computes top_k
// expert MLPs per local token on average whatever the expert parallel size.
LayerFlops layer_forward_flops(const ModelDesc& model, int64_t layer, const CostOptions& options);

// The logits of one micro-batch on one TP rank: 2·b·s·h·padded_vocab_size/t (what the GPU runs).
double lm_head_forward_flops(const ModelDesc& model, const CostOptions& options);

// What recomputation adds to one layer's forward+backward in `options.recompute` mode: nothing,
// the attention core's forward (selective), or the whole forward (full).
double layer_recompute_flops(const ModelDesc& model, int64_t layer, const CostOptions& options);

// One training iteration of global_batch_size sequences, all ranks together, published
// vocabulary (no padding), so that the numbers match the formulas above.
struct IterationFlops {
  double model = 0;     // 3 x forward: the FLOPs model FLOPs utilization (MFU) divides by
  double hardware = 0;  // model + what recomputation redoes: the FLOPs the GPUs execute (HFU)
  // Of `model`, the attention core counted over the full s x s score matrix (within a layer's
  // window), as Megatron-LM (Narayanan et al. 2021) and PaLM (Chowdhery et al. 2022, appendix B)
  // count it; and the same core counted over the causal pairs only, as the FlashAttention papers
  // count it.
  double attention_core = 0;
  double attention_core_causal = 0;
  // `model` in the causal convention: the other one published MFUs use.
  double model_causal() const { return model - attention_core + attention_core_causal; }
};
IterationFlops iteration_flops(const ModelDesc& model, int64_t global_batch_size, int64_t seq_length,
                               RecomputeMode recompute);

}  // namespace pipescope::models
