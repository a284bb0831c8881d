#include "pipescope/planner/internlm_kernels.h"

#include <initializer_list>

#include "element_bytes.h"

namespace pipescope::planner::internlm2023 {
namespace {

using eager::PassTraffic;
using eager::Traffic;

Traffic traffic(double bytes, double kernels) { return {bytes, kernels, 0}; }
Traffic unvectorized(double bytes, double kernels) { return {bytes, kernels, bytes}; }

// `residual.float()` on `elements` bf16 values (read 2, write 4 bytes); its gradient is the cast
// back (read 4, write 2). Mixed dtypes: ATen's unvectorized path.
Traffic cast_to_fp32(double elements) { return unvectorized(elements * (kHalf + kFloat), 1); }

// MixedFusedRMSNorm on an fp32 input with bf16 weights: reads 4, writes 2 bytes an element.
Traffic norm_forward(double elements) { return traffic(elements * (kFloat + kHalf), 1); }

// Its backward: the input gradient (read x in fp32 and dy, write dx in fp32), then the weight
// gradient's partial sums (read x and dy again) and their reduction (a few rows).
Traffic norm_backward(double elements) {
  return traffic(elements * (kFloat + kHalf + kFloat) + elements * (kFloat + kHalf), 3);
}

// A bf16 elementwise op over `elements` with `inputs` operands: read each, write one.
Traffic elementwise(double elements, double inputs) { return traffic(elements * (inputs + 1) * kHalf, 1); }

// flash-attn's rotary_emb.apply_rotary, in place on the `elements` of Q or of K (both halves read
// and written; the cos and sin tables are a few rows).
Traffic rotary(double elements) { return traffic(2 * elements * kHalf, 1); }

// native_dropout: read, write and a one-byte mask; its backward reads the gradient and the mask.
Traffic dropout(double elements) { return traffic(elements * (2 * kHalf + 1), 1); }

}  // namespace

PassTraffic layer(const eager::LayerShape& s) {
  const double t = s.tokens, stream = s.norm_tokens * s.hidden;
  const double f = t * s.ffn_width;
  PassTraffic pass;
  Traffic& fwd = pass.forward;
  Traffic& bwd = pass.backward;

  for (int norm = 0; norm < 2; ++norm) {
    fwd += cast_to_fp32(stream);
    fwd += norm_forward(stream);
    bwd += norm_backward(stream);
    bwd += cast_to_fp32(stream);    // the gradient cast back to bf16: the same bytes
    bwd += elementwise(stream, 2);  // the fork's two gradients summed
    fwd += elementwise(stream, 2);  // the residual add after attention; the layer's last
    if (s.dropout) {
      fwd += dropout(stream);
      bwd += dropout(stream);
    }
  }
  if (s.rope) {
    for (Traffic* side : {&fwd, &bwd}) {
      *side += rotary(t * s.q_width);
      *side += rotary(t * s.kv_width);
    }
  }
  if (s.gated_mlp) {
    fwd += elementwise(f, 1);  // silu(w1(x))
    fwd += elementwise(f, 2);  // times w2(x)
    bwd += elementwise(f, 2);  // the product's two gradients (each reads the gradient and the other)
    bwd += elementwise(f, 2);
    bwd += elementwise(f, 2);             // silu's backward reads its input and the gradient
    bwd += elementwise(t * s.hidden, 2);  // w1's and w2's input gradients summed
  } else {
    fwd += traffic(f * kHalf, 0);  // the pre-activation, written beside fc1's output
    bwd += traffic(f * kHalf, 0);  // read back by the dgrad GEMM's GELU epilogue
  }
  return pass;
}

Traffic norm_recompute(const eager::LayerShape& s) {
  const double stream = s.norm_tokens * s.hidden;
  Traffic again;
  for (int norm = 0; norm < 2; ++norm) {
    if (s.dropout) again += dropout(stream);
    again += cast_to_fp32(stream);
    again += norm_forward(stream);
  }
  again += elementwise(stream, 2);  // the second function's residual add
  return again;
}

PassTraffic head(double tokens, double norm_tokens, double hidden, double vocab) {
  const double stream = norm_tokens * hidden, logits = tokens * vocab;
  PassTraffic pass;
  pass.forward = cast_to_fp32(stream);
  pass.forward += norm_forward(stream);
  pass.forward += traffic(logits * kHalf, 1);      // the loss reads the logits once
  pass.backward = traffic(2 * logits * kHalf, 1);  // and writes their gradient over them
  pass.backward += norm_backward(stream);
  pass.backward += cast_to_fp32(stream);
  return pass;
}

}  // namespace pipescope::planner::internlm2023
