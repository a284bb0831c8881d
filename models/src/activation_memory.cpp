// Every tensor a layer keeps for backward, one line each: which tensor, its shape, its bytes.
// Shapes are per rank. `tokens` = b·s, all tokens of the micro-batch: tensors split along the
// features (heads, FFN) by tensor parallelism. `shard` = the tokens of the tensors outside the
// tensor-parallel regions (norms, dropouts, the inputs of column-parallel layers): b·s,
// replicated on every TP rank, or b·s/t under sequence parallelism, where Megatron keeps the
// shard and all-gathers it again in backward (Korthikanti et al. 2022, section 4.2.2).
#include "pipescope/models/activation_memory.h"

namespace pipescope::models {
namespace {

constexpr int64_t kHalfBytes = 2;   // a bf16/fp16 element
constexpr int64_t kMaskBytes = 1;   // a dropout mask element (uint8/bool in PyTorch)
constexpr int64_t kFloatBytes = 4;  // fp32: softmax statistics, router probabilities, cross entropy
constexpr int64_t kIndexBytes = 8;  // int64: top-k expert indices, targets

struct Shape {
  int64_t b, s, h;
  int64_t tokens;    // b·s
  int64_t shard;     // b·s, or b·s/t under sequence parallelism
  int64_t heads;     // query heads on this rank, a/t
  int64_t q_width;   // heads · head_dim
  int64_t kv_width;  // K/V heads on this rank · head_dim
  bool attention_dropout, hidden_dropout;
};

Shape shape_of(const ModelDesc& m, const CostOptions& o) {
  Shape x{};
  x.b = o.micro_batch_size;
  x.s = o.seq_length;
  x.h = m.hidden_size;
  x.tokens = x.b * x.s;
  x.shard = o.sequence_parallel ? x.tokens / o.tensor_parallel : x.tokens;
  x.heads = m.num_attention_heads / o.tensor_parallel;
  x.q_width = x.heads * m.head_dim;
  x.kv_width = m.num_kv_heads / o.tensor_parallel * m.head_dim;
  x.attention_dropout = m.attention_dropout > 0;
  x.hidden_dropout = m.hidden_dropout > 0;
  return x;
}

int64_t attention_bytes(const Shape& x, const CostOptions& o) {
  int64_t bytes = x.shard * x.h * kHalfBytes;                 // QKV projection input (norm output): shard x h
  bytes += x.tokens * (x.q_width + x.kv_width) * kHalfBytes;  // Q and K (after rotary) for Q·K^T
  bytes += x.tokens * x.kv_width * kHalfBytes;                // V for scores·V: tokens x g/t·d
  bytes += x.tokens * x.q_width * kHalfBytes;                 // output projection input = attention output
  // Selective recomputation redoes the core from Q, K and V, so it keeps none of this.
  if (o.recompute != RecomputeMode::kSelective) {
    const int64_t scores = x.b * x.heads * x.s * x.s;  // b x a/t x s x s
    if (o.flash_attention) {
      // Flash keeps no score and regenerates its dropout mask from the RNG seed.
      bytes += x.b * x.heads * x.s * kFloatBytes;  // log-sum-exp of each score row: b x a/t x s, fp32
    } else {
      bytes += scores * kHalfBytes;  // softmax output, read by its own backward
      // Without attention dropout, scores·V reads the softmax output kept above.
      if (x.attention_dropout) {
        bytes += scores * kMaskBytes;  // attention dropout mask
        bytes += scores * kHalfBytes;  // dropout output, the input of scores·V
      }
    }
  }
  if (x.hidden_dropout) bytes += x.shard * x.h * kMaskBytes;  // dropout mask after the output projection
  return bytes;
}

// Between the up and the down projections of one MLP, `rows` tokens, `ffn` wide on this rank.
int64_t mlp_hidden_bytes(const ModelDesc& m, int64_t rows, int64_t ffn) {
  if (m.mlp == MlpKind::kGelu) {
    return rows * ffn * kHalfBytes     // fc1 output, GELU's input
           + rows * ffn * kHalfBytes;  // GELU output, fc2's input
  }
  // Megatron's fused SwiGLU keeps its 2f-wide input and recomputes silu(gate)·up in backward.
  return rows * 2 * ffn * kHalfBytes  // gate and up projections' outputs
         + rows * ffn * kHalfBytes;   // silu(gate)·up, the down projection's input
}

int64_t mlp_bytes(const ModelDesc& m, int64_t layer, const Shape& x, const CostOptions& o) {
  const int64_t t = o.tensor_parallel;
  int64_t bytes = x.shard * x.h * kHalfBytes;  // up projection (or router) input = norm output
  if (!m.is_moe_layer(layer)) {
    bytes += mlp_hidden_bytes(m, x.tokens, m.ffn_hidden_size / t);
  } else {
    const MoeDesc& e = m.moe;
    const int64_t copies = x.tokens * e.top_k;       // routed token copies, gathered over the sequence
    bytes += x.shard * e.num_experts * kFloatBytes;  // router probabilities: shard x E, fp32
    bytes += x.shard * e.top_k * kIndexBytes;        // chosen experts: shard x top_k, int64
    bytes += copies * x.h * kHalfBytes;              // expert inputs, the permuted copies
    bytes += mlp_hidden_bytes(m, copies, e.expert_ffn_hidden_size / t);
    // The gate-weighted sum of expert outputs needs each output for its gate's gradient.
    bytes += copies * x.h * kHalfBytes;  // expert outputs
    // Shared experts read the norm output already kept above.
    bytes += mlp_hidden_bytes(m, x.tokens, e.num_shared_experts * e.shared_expert_ffn_hidden_size / t);
  }
  if (x.hidden_dropout) bytes += x.shard * x.h * kMaskBytes;  // dropout mask after the down projection
  return bytes;
}

// The gradients alive at once in one MLP's backward, `rows` tokens, `ffn` wide on this rank:
// the incoming one (the down projection's input gradient) and the one the activation's backward
// writes (the up projections' output gradient: 2f wide for SwiGLU, f for GELU).
int64_t mlp_backward_bytes(const ModelDesc& m, int64_t rows, int64_t ffn) {
  const int64_t written = m.mlp == MlpKind::kGelu ? ffn : 2 * ffn;
  return rows * (ffn + written) * kHalfBytes;
}

}  // namespace

LayerBackwardWork layer_backward_work_bytes(const ModelDesc& m, int64_t layer, const CostOptions& o) {
  const Shape x = shape_of(m, o);
  LayerBackwardWork w;
  if (o.flash_attention) {
    const int64_t expanded_kv = x.q_width;  // dK, dV per query head, summed into the K/V heads after
    w.attention_bytes = x.tokens * x.q_width * kHalfBytes          // dO, the incoming gradient
                        + x.tokens * x.q_width * kHalfBytes        // dQ
                        + 2 * x.tokens * expanded_kv * kHalfBytes  // dK, dV
                        + x.tokens * x.q_width * kFloatBytes       // dQ accumulator, fp32
                        + x.b * x.heads * x.s * kFloatBytes;       // rowsum(dO·O), fp32
  } else {
    w.attention_bytes = 2 * x.b * x.heads * x.s * x.s * kHalfBytes;  // d(softmax), d(scores)
  }
  const int64_t t = o.tensor_parallel;
  if (!m.is_moe_layer(layer)) {
    w.mlp_bytes = mlp_backward_bytes(m, x.tokens, m.ffn_hidden_size / t);
  } else {
    const MoeDesc& e = m.moe;
    const int64_t routed = mlp_backward_bytes(m, x.tokens * e.top_k, e.expert_ffn_hidden_size / t);
    const int64_t shared =
        mlp_backward_bytes(m, x.tokens, e.num_shared_experts * e.shared_expert_ffn_hidden_size / t);
    w.mlp_bytes = routed > shared ? routed : shared;
  }
  return w;
}

LayerActivations layer_activation_bytes(const ModelDesc& m, int64_t layer, const CostOptions& o) {
  const Shape x = shape_of(m, o);
  LayerActivations a;
  if (o.recompute == RecomputeMode::kFull) {
    a.checkpoint_bytes = x.shard * x.h * kHalfBytes;  // the layer input: shard x h
    return a;
  }
  a.attention_bytes = attention_bytes(x, o);
  a.mlp_bytes = mlp_bytes(m, layer, x, o);
  a.norm_bytes = 2 * x.shard * x.h * kHalfBytes;  // each norm's input: shard x h
  return a;
}

int64_t embedding_activation_bytes(const ModelDesc& m, const CostOptions& o) {
  const Shape x = shape_of(m, o);
  return x.hidden_dropout ? x.shard * x.h * kMaskBytes : 0;  // embedding dropout mask: shard x h
}

int64_t output_activation_bytes(const ModelDesc& m, const CostOptions& o) {
  const Shape x = shape_of(m, o);
  const int64_t vocab_per_rank = padded_vocab_size(m, o) / o.tensor_parallel;
  int64_t bytes = x.shard * x.h * kHalfBytes;        // final norm input: shard x h
  bytes += x.shard * x.h * kHalfBytes;               // LM head input (final norm output)
  bytes += x.tokens * vocab_per_rank * kFloatBytes;  // softmax of the logits: tokens x V/t, fp32
  bytes += x.tokens * kMaskBytes;                    // which targets fall in this rank's vocab slice
  bytes += x.tokens * kIndexBytes;                   // targets shifted into the slice, int64
  return bytes;
}

int64_t output_transient_bytes(const ModelDesc& m, const CostOptions& o) {
  return shape_of(m, o).tokens * (padded_vocab_size(m, o) / o.tensor_parallel) * kHalfBytes;
}

}  // namespace pipescope::models
