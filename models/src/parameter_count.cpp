#include "pipescope/models/parameter_count.h"

namespace pipescope::models {
namespace {

// How the per-rank functions split a layer; check_cost_options makes every division exact.
struct Split {
  int64_t t = 1;   // tensor parallel
  int64_t ep = 1;  // expert parallel
};

int64_t norm_parameters(const ModelDesc& m) {
  return m.norm == NormKind::kLayerNorm ? 2 * m.hidden_size : m.hidden_size;
}

int64_t attention_parameters(const ModelDesc& m, Split split) {
  const int64_t h = m.hidden_size;
  const int64_t q = m.num_attention_heads * m.head_dim / split.t;  // this rank's query width
  const int64_t kv = m.num_kv_heads * m.head_dim / split.t;        // and K/V width
  int64_t n = h * (q + 2 * kv) + q * h;
  if (m.qkv_bias) n += q + 2 * kv;      // column-parallel: split
  if (m.attention_output_bias) n += h;  // row-parallel: added after the reduce, replicated
  return n;
}

// One MLP of FFN size `f_rank` on this rank (already split).
int64_t mlp_parameters(const ModelDesc& m, int64_t f_rank) {
  const int64_t h = m.hidden_size;
  const int64_t up_matrices = m.mlp == MlpKind::kSwiglu ? 2 : 1;  // SwiGLU: gate and up
  int64_t n = (up_matrices + 1) * h * f_rank;
  if (m.mlp_bias) n += up_matrices * f_rank + h;
  return n;
}

LayerParameters layer(const ModelDesc& m, int64_t index, Split split) {
  LayerParameters p;
  p.attention = attention_parameters(m, split);
  p.norms = 2 * norm_parameters(m);
  if (!m.is_moe_layer(index)) {
    p.dense_mlp = mlp_parameters(m, m.ffn_hidden_size / split.t);
    return p;
  }
  const MoeDesc& e = m.moe;
  p.router = m.hidden_size * e.num_experts;  // a linear gate without bias, replicated
  p.routed_experts = e.num_experts / split.ep * mlp_parameters(m, e.expert_ffn_hidden_size / split.t);
  p.shared_experts = e.num_shared_experts * mlp_parameters(m, e.shared_expert_ffn_hidden_size / split.t);
  return p;
}

ModelParameters model(const ModelDesc& m, Split split, int64_t vocab_rows) {
  ModelParameters p;
  p.embedding = vocab_rows * m.hidden_size;
  if (m.position == PositionKind::kLearned) p.embedding += m.max_position_embeddings * m.hidden_size;
  for (int64_t i = 0; i < m.num_layers; ++i) p.layers += layer(m, i, split).total();
  p.final_norm = norm_parameters(m);
  p.lm_head = m.tied_embeddings ? 0 : vocab_rows * m.hidden_size;
  return p;
}

}  // namespace

LayerParameters layer_parameters(const ModelDesc& model, int64_t index) { return layer(model, index, {}); }

ModelParameters model_parameters(const ModelDesc& m) { return model(m, {}, m.vocab_size); }

int64_t active_parameters(const ModelDesc& m) {
  int64_t inactive = 0;
  for (int64_t i = 0; i < m.num_layers; ++i) {
    if (!m.is_moe_layer(i)) continue;
    inactive += (m.moe.num_experts - m.moe.top_k) * mlp_parameters(m, m.moe.expert_ffn_hidden_size);
  }
  return model_parameters(m).total() - inactive;
}

LayerParameters layer_parameters_per_rank(const ModelDesc& m, int64_t index, const CostOptions& o) {
  return layer(m, index, {o.tensor_parallel, o.expert_parallel});
}

ModelParameters model_parameters_per_rank(const ModelDesc& m, const CostOptions& o) {
  return model(m, {o.tensor_parallel, o.expert_parallel}, padded_vocab_size(m, o) / o.tensor_parallel);
}

}  // namespace pipescope::models
