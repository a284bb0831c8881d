// Reads a Hugging Face config.json of the common decoder architectures into a ModelDesc. The
// family comes from `model_type` (or, without it, the first `architectures` entry):
//
//   model_type  attention        MLP                       norm       biases
//   llama       MHA/GQA          SwiGLU                    RMSNorm    attention_bias, mlp_bias
//   mistral     MHA/GQA          SwiGLU                    RMSNorm    none
//   mixtral     MHA/GQA          num_local_experts SwiGLU experts, top num_experts_per_tok
//   qwen2       MHA/GQA          SwiGLU                    RMSNorm    q, k, v only
//   internlm2   MHA/GQA          SwiGLU                    RMSNorm    `bias`: q, k, v and output
//   gpt_neox    MHA              GELU                      LayerNorm  all linear layers
//
// Every field of a config must be known: mapped (hidden_size, intermediate_size,
// num_key_value_heads, tie_word_embeddings, num_local_experts, ...) or a harmless extra that
// does not change parameters, FLOPs or activations (rope_theta, rms_norm_eps, token ids,
// GPT-NeoX's rotary_pct and use_parallel_residual, ...). Any other field may change the
// architecture in a way these counts would miss, so it is an error naming the field, as are a
// missing required field, a value of the wrong type and an unsupported model_type.
// Mistral's sliding_window is read as full attention: counts are exact for s <= the window.
#pragma once

#include <span>
#include <string_view>

#include "pipescope/common/expected.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models {

// The model_type values parse_hf_config accepts.
std::span<const std::string_view> supported_hf_model_types();

// `name` becomes ModelDesc::name; `origin` (the file's path) prefixes errors and is the source.
// The result is validated.
Expected<ModelDesc> parse_hf_config(std::string_view json_text, std::string_view name,
                                    std::string_view origin);

}  // namespace pipescope::models
