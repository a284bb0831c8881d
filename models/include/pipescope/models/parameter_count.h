// Parameter counts, whole and per rank. With h hidden, a query heads and g K/V heads of d,
// f the FFN size, V the vocabulary, one decoder layer holds
//   attention  h·a·d (Q) + 2·h·g·d (K, V) + a·d·h (output)  [+ a·d + 2·g·d, + h biases]
//   MLP        GELU 2·h·f, SwiGLU 3·h·f                      [+ f (2f for SwiGLU) + h biases]
//   MoE        router h·E + E expert MLPs + shared expert MLPs (no router bias)
//   norms      2 per layer: h each for RMSNorm, 2h (weight and bias) for LayerNorm
// and outside the layers: word embedding V·h (+ positions·h when learned), final norm, LM head
// V·h unless tied. For GPT-3 (MHA, f = 4h, biases) a layer is 12h² + 13h (Narayanan et al. 2021).
#pragma once

#include <cstdint>

#include "pipescope/models/cost_options.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models {

struct LayerParameters {
  int64_t attention = 0;       // Q, K, V and output projections with their biases
  int64_t dense_mlp = 0;       // dense layers only
  int64_t router = 0;          // MoE layers only
  int64_t routed_experts = 0;  // all routed experts of a MoE layer (those of one EP rank per rank)
  int64_t shared_experts = 0;
  int64_t norms = 0;
  int64_t total() const { return attention + dense_mlp + router + routed_experts + shared_experts + norms; }
};

struct ModelParameters {
  int64_t embedding = 0;  // word embedding, plus learned positions
  int64_t layers = 0;     // all decoder layers
  int64_t final_norm = 0;
  int64_t lm_head = 0;  // 0 when tied to the word embedding
  int64_t total() const { return embedding + layers + final_norm + lm_head; }
};

// Whole model, published vocabulary (no padding): what model cards quote.
LayerParameters layer_parameters(const ModelDesc& model, int64_t layer);
ModelParameters model_parameters(const ModelDesc& model);
// Parameters one token goes through: a MoE layer counts top_k of its routed experts.
int64_t active_parameters(const ModelDesc& model);

// One rank's share in Megatron's layout: weight matrices and the biases of column-parallel
// layers (Q/K/V, FFN up) split by t; norms, row-parallel biases (attention output, FFN down),
// the router and learned positions replicated; routed experts spread over expert_parallel ranks
// and split by t inside; embedding and LM head hold padded_vocab_size / t rows. With tied
// embeddings and pipeline parallelism Megatron keeps a copy of the word embedding on the last
// stage for the LM head: that choice belongs to the planner, so lm_head is 0 here when tied.
LayerParameters layer_parameters_per_rank(const ModelDesc& model, int64_t layer, const CostOptions& options);
ModelParameters model_parameters_per_rank(const ModelDesc& model, const CostOptions& options);

}  // namespace pipescope::models
