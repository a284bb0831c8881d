// The memory-bound kernels that eager PyTorch launches for a dense decoder written as
// examples/llama_train_step.py writes it (--framework pytorch-eager; docs/planner.md, "Frameworks"),
// each op as PyTorch 2.11 runs it: bytes it reads and writes in HBM, and how many kernels it
// launches. GEMMs and the attention core are priced elsewhere; these are the kernels between
// them, which eager PyTorch does not fuse.
//
// Per decoder layer, forward: torch's fused rms_norm (twice); rotary on Q and K as the example's
// autograd function writes it (x cos, -x2, cat, R(x) sin, the sum: five bf16 kernels each); V made
// contiguous; with grouped-query attention K and V repeated to every head; the two residual adds;
// SiLU and its product with the up projection (GELU for a non-gated MLP); dropout where the model
// has it. Backward: the SwiGLU backward in fp32 over slices of 4 M elements (fifteen kernels a
// slice: four casts up, sigmoid, 1 - s, 1 + x (1 - s), six products, two casts down), the
// gate/up and Q/K/V gradients concatenated (split and chunk backward), rms_norm's input and
// weight gradients, the two gradient sums where the residual stream forks, rotary's backward
// (five kernels each for Q and K), V's gradient copied back to the token-major layout.
#pragma once

#include <cstdint>

namespace pipescope::planner::eager {

// HBM bytes read and written by a run of kernels, and how many kernels it launches.
// `unvectorized_bytes` is the part of `bytes` that ATen's elementwise kernels move without vector
// loads: they vectorize only where every operand is contiguous and of one dtype, so casts,
// mixed-dtype arithmetic and copies into another layout take the slower path (the calibration
// suite's eager/cast_* and eager/transpose_* benchmarks measure it).
struct Traffic {
  double bytes = 0;
  double kernels = 0;
  double unvectorized_bytes = 0;

  Traffic& operator+=(const Traffic& other) {
    bytes += other.bytes;
    kernels += other.kernels;
    unvectorized_bytes += other.unvectorized_bytes;
    return *this;
  }
};

struct PassTraffic {
  Traffic forward, backward;
};

// One decoder layer on one rank for one micro-batch: widths are the rank's (divided by TP),
// `norm_tokens` the tokens the norms and residual adds see (divided by TP under sequence
// parallelism).
struct LayerShape {
  double tokens = 0;
  double norm_tokens = 0;
  double hidden = 0;
  double q_width = 0;   // query heads x head dim
  double kv_width = 0;  // key-value heads x head dim
  double ffn_width = 0;
  bool gated_mlp = true;  // SwiGLU; false: GELU
  bool rope = true;
  bool dropout = false;  // dropout after attention and after the MLP
};

PassTraffic layer(const LayerShape& shape);

// The final norm, the logits cast to fp32 and F.cross_entropy (log_softmax, nll_loss) on `vocab`
// columns; the LM head's GEMMs are priced elsewhere.
PassTraffic head(double tokens, double norm_tokens, double hidden, double vocab);

// The token embedding's lookup and embedding_dense_backward: the weight gradient zeroed, the
// output gradient sorted by token and summed into its rows in fp32.
PassTraffic embedding(double tokens, double hidden, double vocab_rows);

// The example's main-gradient hooks: after each micro-batch's backward every parameter tensor's
// bf16 gradient is added into its fp32 main gradient (read 4 + 2, write 4 bytes a parameter; mixed
// dtypes, so unvectorized).
Traffic gradient_hooks(double parameters, double tensors);

// The optimizer step on fp32 masters: fused Adam (read parameter, gradient and both moments,
// write parameter and moments: 28 bytes a parameter), the bf16 weights copied from the masters
// (6) and the main gradients zeroed (4), each a multi_tensor_apply launch per 320 blocks of
// 65,536 elements (ATen's MultiTensorApply.cuh).
Traffic optimizer_step(double parameters);

}  // namespace pipescope::planner::eager
