// The memory-bound kernels of InternLM of 2023 (--framework internlm-2023), read from
// InternLM/InternLM at 20fe5ac (internlm/model/modeling_internlm.py, PackedFlashBaseLayer1D and
// PackedFlashInternLm1D; linear.py, FeedForward; embedding.py, ApplyRotaryEmbQKV_; loss.py): a
// framework that fuses some ops and not others. Bytes each kernel reads and writes in HBM, and how
// many kernels; GEMMs and the attention core are priced elsewhere.
//
// Per decoder layer, forward: the residual stream cast to fp32 before each norm
// (`norm(residual.float())`), apex's MixedFusedRMSNorm on that fp32 input writing bf16 (twice);
// flash-attn's rotary in place on Q and on K; the residual add after attention and the one that
// ends the layer; SiLU and its product with w2's output as two eager PyTorch kernels
// (`w3(silu(w1(x)) * w2(x))`; a non-gated MLP is flash-attn's FusedMLP, GELU in the GEMM's
// epilogue, which also writes the pre-activation); dropout where the model has it (the 7B has
// none, and PyTorch returns its input for p = 0). Backward: the norms' input and weight gradients
// on the fp32 input, the casts' gradients back to bf16, the gradient sums where the residual
// stream forks into a cast and an add, the sum of w1's and w2's input gradients, the SwiGLU
// product's and SiLU's backward as three eager kernels, rotary's backward in place.
//
// Without full recomputation the layer checkpoints its dropout-and-norm functions
// (dropout_selective_checkpoint, on whenever checkpoint is off): the backward runs them again.
#pragma once

#include "pipescope/planner/eager_kernels.h"

namespace pipescope::planner::internlm2023 {

// One decoder layer on one rank for one micro-batch (eager::LayerShape's widths; InternLM of 2023
// has no sequence parallelism, so norm_tokens is tokens there).
eager::PassTraffic layer(const eager::LayerShape& shape);

// The dropout-and-norm functions that the layer checkpoints, run again in its backward.
eager::Traffic norm_recompute(const eager::LayerShape& shape);

// The final norm on the fp32 stream and flash-attn's cross entropy on `vocab` columns of bf16
// logits: the forward reads them once; the backward writes the gradient in place over them
// (inplace_backward). The LM head's GEMMs are priced elsewhere.
eager::PassTraffic head(double tokens, double norm_tokens, double hidden, double vocab);

}  // namespace pipescope::planner::internlm2023
