#include "pipescope/models/flop_count.h"

namespace pipescope::models {
namespace {

// 2·m·n·k for an (m x k)·(k x n) product, in double: a 405B iteration is ~1e22 FLOPs.
double matmul(double m, double n, double k) { return 2.0 * m * n * k; }

double mlp_flops(const ModelDesc& model, double tokens, int64_t ffn_per_rank) {
  const double matrices = model.mlp == MlpKind::kSwiglu ? 3 : 2;
  return matrices * matmul(tokens, static_cast<double>(ffn_per_rank), static_cast<double>(model.hidden_size));
}

}  // namespace

double attention_pairs(double s, int64_t window, bool causal) {
  const double w = static_cast<double>(window);
  const bool windowed = window > 0 && w < s;
  if (!causal) return s * (windowed ? w : s);
  return windowed ? s * w - w * w / 2 : s * s / 2;
}

LayerFlops layer_forward_flops(const ModelDesc& m, int64_t layer, const CostOptions& o) {
  const double t = static_cast<double>(o.tensor_parallel);
  const double b = static_cast<double>(o.micro_batch_size);
  const double s = static_cast<double>(o.seq_length);
  const double tokens = b * s;
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(m.head_dim);
  const int64_t heads_per_rank = m.num_attention_heads / o.tensor_parallel;  // exact: check_cost_options
  const int64_t kv_heads_per_rank = m.num_kv_heads / o.tensor_parallel;
  const double heads = static_cast<double>(heads_per_rank);
  const double kv_heads = static_cast<double>(kv_heads_per_rank);

  LayerFlops f;
  f.attention_linear = matmul(tokens, (heads + 2 * kv_heads) * d, h) + matmul(tokens, h, heads * d);
  // Per head and sequence: (s x d)·(d x s) scores, then (s x s)·(s x d) values: 2·2·d FLOPs a
  // query-key pair. Full s², or s times the layer's window.
  f.attention_core = 2 * b * heads * 2 * d * attention_pairs(s, m.window_of(layer), false);
  if (!m.is_moe_layer(layer)) {
    f.mlp = mlp_flops(m, tokens, m.ffn_hidden_size / o.tensor_parallel);
    return f;
  }
  const MoeDesc& e = m.moe;
  const double router_tokens = o.sequence_parallel ? tokens / t : tokens;
  f.router = matmul(router_tokens, static_cast<double>(e.num_experts), h);
  f.mlp = static_cast<double>(e.top_k) * mlp_flops(m, tokens, e.expert_ffn_hidden_size / o.tensor_parallel) +
          mlp_flops(m, tokens, e.num_shared_experts * e.shared_expert_ffn_hidden_size / o.tensor_parallel);
  return f;
}

double lm_head_forward_flops(const ModelDesc& m, const CostOptions& o) {
  const double tokens = static_cast<double>(o.micro_batch_size) * static_cast<double>(o.seq_length);
  const int64_t vocab_per_rank = padded_vocab_size(m, o) / o.tensor_parallel;  // exact by padding
  return matmul(tokens, static_cast<double>(vocab_per_rank), static_cast<double>(m.hidden_size));
}

double layer_recompute_flops(const ModelDesc& m, int64_t layer, const CostOptions& o) {
  switch (o.recompute) {
    case RecomputeMode::kNone: return 0;
    case RecomputeMode::kSelective: return layer_forward_flops(m, layer, o).attention_core;
    case RecomputeMode::kFull: return layer_forward_flops(m, layer, o).forward();
  }
  return 0;
}

IterationFlops iteration_flops(const ModelDesc& m, int64_t global_batch_size, int64_t seq_length,
                               RecomputeMode recompute) {
  CostOptions whole;  // one rank holding everything: t = 1, no padding effects below
  whole.micro_batch_size = global_batch_size;
  whole.seq_length = seq_length;
  whole.recompute = recompute;
  double forward = 0;
  double recomputed = 0;
  double core = 0, core_causal = 0;
  const double b = static_cast<double>(global_batch_size), s = static_cast<double>(seq_length);
  const double heads = static_cast<double>(m.num_attention_heads), d = static_cast<double>(m.head_dim);
  for (int64_t layer = 0; layer < m.num_layers; ++layer) {
    const LayerFlops f = layer_forward_flops(m, layer, whole);
    forward += f.forward();
    core += f.attention_core;
    core_causal += 4 * b * heads * d * attention_pairs(s, m.window_of(layer), true);
    recomputed += layer_recompute_flops(m, layer, whole);
  }
  // The published vocabulary, not the padded one: MFU compares against the model's own work.
  forward += matmul(static_cast<double>(global_batch_size) * static_cast<double>(seq_length),
                    static_cast<double>(m.vocab_size), static_cast<double>(m.hidden_size));
  IterationFlops flops;
  flops.model = 3 * forward;
  flops.hardware = flops.model + recomputed;
  flops.attention_core = 3 * core;
  flops.attention_core_causal = 3 * core_causal;
  return flops;
}

}  // namespace pipescope::models
