#include "pipescope/planner/eager_kernels.h"

#include <algorithm>
#include <cmath>

#include "element_bytes.h"

namespace pipescope::planner::eager {
namespace {

// The example's SwiGLU backward works on slices of this many elements (4 M: 16 MB per fp32
// temporary).
constexpr double kSwigluSliceElements = 4 << 20;
// Per element of the FFN width, the slice's fifteen kernels: gate, up and the output gradient
// (twice) cast to fp32 (read 2, write 4), sigmoid, 1 - s and 1 + x (1 - s) (read 4, write 4 each),
// six fp32 products (read 8, write 4) and the two gradients cast back to bf16 (read 4, write 2).
constexpr double kSwigluBackwardBytes = 4 * 6 + 3 * 8 + 6 * 12 + 2 * 6;
constexpr double kSwigluBackwardCastBytes = 4 * 6 + 2 * 6;  // the casts, unvectorized
constexpr double kSwigluBackwardKernels = 15;

// multi_tensor_apply launches one kernel per 320 blocks of 65,536 elements (ATen's
// MultiTensorApply.cuh, kChunkSize and depth_to_max_blocks).
constexpr double kMultiTensorElementsPerLaunch = 320.0 * 65536;

// CUB's radix sort, unique-by-key and scans behind embedding_dense_backward, its partial-segment
// kernels and the two that sum rows: small launches whatever the batch.
constexpr double kEmbeddingBackwardKernels = 15;

Traffic traffic(double bytes, double kernels) { return {bytes, kernels, 0}; }

// Kernels that take ATen's unvectorized path: casts, mixed dtypes, another layout.
Traffic unvectorized(double bytes, double kernels) { return {bytes, kernels, bytes}; }

// Rotary as the example's autograd function writes it, on the `elements` of Q or of K: forward
// x cos, -x2, cat, R(x) sin, the sum (read 5.5, write 4.5 elements an element); backward g cos,
// g sin, -x2, cat, the difference (the same).
Traffic rotary(double elements) { return traffic(10 * elements * kHalf, 5); }

}  // namespace

PassTraffic layer(const LayerShape& s) {
  const double t = s.tokens, n = s.norm_tokens, h = s.hidden;
  const double q = s.q_width, kv = s.kv_width, f = s.ffn_width;
  PassTraffic pass;
  Traffic& fwd = pass.forward;
  Traffic& bwd = pass.backward;

  // Two rms_norms (read and write the stream) and two residual adds (read two, write one).
  fwd += traffic(2 * 2 * n * h * kHalf + 2 * 3 * n * h * kHalf, 4);
  // rms_norm's input and weight gradients (read x and dy, write dx; read both again), and the
  // gradient sums where the residual stream forks into each norm.
  bwd += traffic(2 * 5 * n * h * kHalf + 2 * 3 * n * h * kHalf, 6);

  if (s.rope) {
    for (Traffic* pass_traffic : {&fwd, &bwd}) {
      *pass_traffic += rotary(t * q);
      *pass_traffic += rotary(t * kv);
    }
  }
  // V made contiguous; its gradient copied back to the token-major layout.
  fwd += unvectorized(2 * t * kv * kHalf, 1);
  bwd += unvectorized(2 * t * kv * kHalf, 1);
  // The Q/K/V gradients concatenated into the fused projection's (split's backward).
  bwd += traffic(2 * t * (q + 2 * kv) * kHalf, 1);
  if (kv < q) {
    // repeat_interleave of K and V to every query head (read kv, write q: a copy into another
    // layout); its backward zeroes the kv gradient and adds each group's gradients into it.
    fwd += unvectorized(2 * t * (kv + q) * kHalf, 2);
    bwd += traffic(2 * t * (q + 2 * kv) * kHalf, 4);
  }

  if (s.gated_mlp) {
    fwd += traffic(t * f * 2 * kHalf + t * f * 3 * kHalf, 2);  // SiLU, then its product with up
    const double rows_per_slice = std::max(1.0, std::floor(kSwigluSliceElements / std::max(f, 1.0)));
    Traffic swiglu_backward =
        traffic(t * f * kSwigluBackwardBytes, kSwigluBackwardKernels * std::ceil(t / rows_per_slice));
    swiglu_backward.unvectorized_bytes = t * f * kSwigluBackwardCastBytes;
    bwd += swiglu_backward;
    bwd += traffic(2 * 2 * t * f * kHalf, 1);  // gate and up gradients concatenated (chunk's backward)
  } else {
    fwd += traffic(2 * t * f * kHalf, 1);  // GELU
    bwd += traffic(3 * t * f * kHalf, 1);  // gelu_backward reads the input and the gradient
  }
  if (s.dropout) {
    // native_dropout after attention and after the MLP: read, write and a one-byte mask; its
    // backward reads the gradient and the mask and writes the gradient.
    fwd += traffic(2 * n * h * (2 * kHalf + 1), 2);
    bwd += traffic(2 * n * h * (2 * kHalf + 1), 2);
  }
  return pass;
}

PassTraffic head(double tokens, double norm_tokens, double hidden, double vocab) {
  const double logits = tokens * vocab;
  PassTraffic pass;
  // rms_norm; logits.float() (read 2, write 4); log_softmax (read 4, write 4); nll_loss.
  pass.forward =
      traffic(2 * norm_tokens * hidden * kHalf + logits * (kHalf + kFloat) + logits * 2 * kFloat, 4);
  pass.forward.unvectorized_bytes = logits * (kHalf + kFloat);
  // nll_loss's backward zeroes an fp32 gradient and scatters into it; log_softmax's backward reads
  // the gradient and its output and writes one; the cast back to bf16 (read 4, write 2); rms_norm's
  // input and weight gradients.
  pass.backward = traffic(
      logits * kFloat + logits * 3 * kFloat + logits * (kFloat + kHalf) + 5 * norm_tokens * hidden * kHalf,
      6);
  pass.backward.unvectorized_bytes = logits * (kFloat + kHalf);
  return pass;
}

PassTraffic embedding(double tokens, double hidden, double vocab_rows) {
  PassTraffic pass;
  pass.forward = traffic(2 * tokens * hidden * kHalf, 1);
  // The bf16 weight gradient zeroed; the output gradient read, summed per token in fp32 partials
  // (written and read) and added into its rows (read and write).
  pass.backward = traffic(vocab_rows * hidden * kHalf + tokens * hidden * (kHalf + 2 * kFloat + 2 * kHalf),
                          kEmbeddingBackwardKernels);
  return pass;
}

Traffic gradient_hooks(double parameters, double tensors) {
  return unvectorized(parameters * (kFloat + kHalf + kFloat), tensors);
}

Traffic optimizer_step(double parameters) {
  return traffic(parameters * (kFusedAdamBytes + kMasterToBf16Bytes + kZeroGradientBytes),
                 3 * std::ceil(parameters / kMultiTensorElementsPerLaunch));
}

}  // namespace pipescope::planner::eager
