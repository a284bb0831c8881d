// pipescope's own model description format, the one of models/bundled/*.json:
//
//   { "schema_version": 1, "name": "llama2-7b", "architecture": "llama", "source": "...",
//     "vocab_size": 32000, "hidden_size": 4096, "num_layers": 32, "num_attention_heads": 32,
//     "num_kv_heads": 32, "head_dim": 128, "ffn_hidden_size": 11008, "mlp": "swiglu",
//     "norm": "rmsnorm", "position_embedding": "rope", "max_position_embeddings": 4096,
//     "tied_embeddings": false, "qkv_bias": false, "attention_output_bias": false,
//     "mlp_bias": false, "attention_dropout": 0.0, "hidden_dropout": 0.0,
//     "moe": { "num_experts": 8, "top_k": 2, "expert_ffn_hidden_size": 14336,
//              "num_shared_experts": 0, "shared_expert_ffn_hidden_size": 0, "layer_frequency": 1 } }
//
// The field names are ModelDesc's. Required: schema_version, name, vocab_size, hidden_size,
// num_layers, num_attention_heads, ffn_hidden_size, mlp, norm, position_embedding ("rope",
// "learned" or "alibi"),
// tied_embeddings. The rest default to: num_kv_heads = num_attention_heads, head_dim =
// hidden_size / num_attention_heads, no biases, no dropout, no experts. Unknown fields are errors.
#pragma once

#include <string>
#include <string_view>

#include "pipescope/common/expected.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models {

inline constexpr int kModelSchemaVersion = 1;

// `origin` (a path or a bundled name) prefixes error messages. The result is validated.
Expected<ModelDesc> parse_model_json(std::string_view text, std::string_view origin);

// Every field written, so that parse_model_json(to_model_json(m)) == m.
std::string to_model_json(const ModelDesc& model);

}  // namespace pipescope::models
