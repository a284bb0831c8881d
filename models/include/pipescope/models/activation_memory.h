// Bytes a rank keeps from the forward pass of one micro-batch until its backward pass, in 16-bit
// training (2 bytes per element, 1 byte per dropout-mask element), after Korthikanti et al.
// 2022, "Reducing Activation Recomputation in Large Transformer Models" (arXiv 2205.05198).
// Their Table 2, per transformer layer (GPT: GELU MLP of 4h, multi-head attention, dropout):
//   no parallelism                                  sbh·(34 + 5as/h)
//   tensor parallel                                 sbh·(10 + 24/t + 5as/(ht))
//   tensor + sequence parallel                      sbh·(34/t + 5as/(ht))
//   tensor parallel + selective recompute           sbh·(10 + 24/t)
//   tensor + sequence parallel + selective          sbh·(34/t)
//   full recompute                                  sbh·2 (the layer's input)
// layer_activation_bytes reproduces these exactly for such a model and generalizes them term by
// term (activation_memory.cpp lists every tensor): SwiGLU, grouped-query attention, RMSNorm (it
// keeps its input as LayerNorm does), no dropout (LLaMA-style pretraining: masks vanish and the
// value product reads the softmax output itself), fused (flash) attention (no s x s tensor;
// the fp32 log-sum-exp of the softmax instead), and mixture of experts. Two conventions:
//  - per-token norm statistics (mean, 1/rms: 4-8 bytes a token) are left out, as the paper does;
//  - under full recompute with sequence parallelism the kept input is the rank's sequence
//    shard, 2sbh/t (Table 2's sbh·2 is the t = 1 or no-SP case).
// Full recompute also needs, during one layer's backward, that layer's activations without
// recompute: ask for RecomputeMode::kNone to size that transient.
#pragma once

#include <cstdint>

#include "pipescope/models/cost_options.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models {

struct LayerActivations {
  int64_t attention_bytes = 0;   // attention block, with the dropout mask after its output
  int64_t mlp_bytes = 0;         // MLP or MoE block (router, experts), with its dropout mask
  int64_t norm_bytes = 0;        // the inputs of the layer's two norms
  int64_t checkpoint_bytes = 0;  // full recompute: the layer's input, all that is kept
  int64_t total_bytes() const { return attention_bytes + mlp_bytes + norm_bytes + checkpoint_bytes; }
};

// One decoder layer, one micro-batch, one rank. Experts: tokens spread evenly over experts, so a
// rank holds top_k routed copies of each of its micro-batch's tokens whatever the expert
// parallel size; Megatron's token dispatchers gather the sequence before the experts, so
// under sequence parallelism the routed copies are not split by t. Requires
// check_cost_options(model, options).ok().
LayerActivations layer_activation_bytes(const ModelDesc& model, int64_t layer, const CostOptions& options);

// First pipeline stage: the dropout mask after the embedding (Korthikanti et al. 2022, 4.3),
// split by t under sequence parallelism; 0 without dropout. The embedding's output is the first
// layer's input and counted there.
int64_t embedding_activation_bytes(const ModelDesc& model, const CostOptions& options);

// Last pipeline stage: the final norm's input and output (the LM head's input), 2sbh each
// (split by t under SP), and what Megatron's vocab-parallel cross entropy saves: the softmax of
// the logits in fp32, 4·s·b·V/t with the padded V, a 1-byte target mask and int64 targets per
// token. The 16-bit logits are not kept: the matmul's backward needs only its input.
int64_t output_activation_bytes(const ModelDesc& model, const CostOptions& options);

// Working memory of one layer's backward beyond what the layer keeps, per block (the MLP's
// backward ends before the attention's begins, so they never coexist), in Megatron-LM's fused
// layer. MLP: the incoming gradient of the down projection's input and the gradient its fused
// SwiGLU (or bias-GELU) backward writes for the up projection's output (2f wide for SwiGLU).
// Attention: FlashAttention's backward holds the output gradient, dQ, dK and dV (expanded to
// every query head under grouped-query attention, then summed), an fp32 dQ accumulator and the
// fp32 row sums of dO·O; unfused, the gradients of the scores and of their softmax, b x a/t x
// s x s each. The weight gradients go straight into the main gradients (Megatron's fused
// weight-gradient accumulation) and are not counted.
struct LayerBackwardWork {
  int64_t attention_bytes = 0;
  int64_t mlp_bytes = 0;
  int64_t peak_bytes() const { return attention_bytes > mlp_bytes ? attention_bytes : mlp_bytes; }
};
LayerBackwardWork layer_backward_work_bytes(const ModelDesc& model, int64_t layer,
                                            const CostOptions& options);

// Last pipeline stage, working memory of the loss: Megatron's cross entropy casts the 16-bit
// logits to fp32 (vocab_parallel_logits.float(), the copy it keeps) while they are alive, and its
// backward casts the fp32 gradient back to 16 bits beside it: 2·s·b·V/t either way.
int64_t output_transient_bytes(const ModelDesc& model, const CostOptions& options);

}  // namespace pipescope::models
