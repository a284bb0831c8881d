// What pipescope needs to know about a decoder-only transformer to count its parameters, FLOPs
// and activation bytes: embedding, num_layers decoder layers (norm, attention, norm, MLP or
// mixture of experts), final norm, LM head, loss. Bundled descriptions live in
// models/bundled/*.json (model_json.h), others come from a Hugging Face config.json (hf_config.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::models {

// GELU: two matrices h->f->h (GPT). SwiGLU: gate and up h->f, down f->h (LLaMA, Shazeer 2020).
enum class MlpKind { kGelu, kSwiglu };
// LayerNorm has a weight and a bias of h each; RMSNorm only the weight.
enum class NormKind { kLayerNorm, kRmsNorm };
// Learned absolute positions add max_position_embeddings x h parameters; rotary adds none, nor
// does ALiBi (Press et al. 2022: a per-head linear bias on the attention scores, as BLOOM trained).
enum class PositionKind { kRope, kLearned, kAlibi };

// Mixture of experts (Shazeer et al. 2017; Mixtral; DeepSeekMoE's shared experts).
struct MoeDesc {
  int64_t num_experts = 0;  // routed experts per MoE layer; 0 means a dense model
  int64_t top_k = 0;        // routed experts each token goes through
  int64_t expert_ffn_hidden_size = 0;
  int64_t num_shared_experts = 0;             // experts every token goes through, besides the routed ones
  int64_t shared_expert_ffn_hidden_size = 0;  // of each shared expert
  // Megatron's --moe-layer-freq: layer i (from 0) is a MoE layer when i % layer_frequency == 0;
  // the others have the dense MLP of ffn_hidden_size.
  int64_t layer_frequency = 1;
};

struct ModelDesc {
  std::string name;
  std::string architecture;  // "llama", "mixtral", "gpt", ...: informational
  std::string source;        // where the numbers come from (paper, model card, config.json)
  int64_t vocab_size = 0;    // as published; cost functions pad it (cost_options.h)
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_kv_heads = 0;  // equal to num_attention_heads: multi-head; fewer: grouped-query
  int64_t head_dim = 0;      // usually hidden_size / num_attention_heads
  int64_t ffn_hidden_size = 0;
  MlpKind mlp = MlpKind::kSwiglu;
  NormKind norm = NormKind::kRmsNorm;
  PositionKind position = PositionKind::kRope;
  int64_t max_position_embeddings = 0;  // needed for learned positions, informational otherwise
  bool tied_embeddings = false;         // the LM head reuses the word embedding matrix
  bool qkv_bias = false;
  bool attention_output_bias = false;
  bool mlp_bias = false;
  // Dropout probabilities: any dropout stores a 1-byte mask per element (Korthikanti et al.
  // 2022); LLaMA-style models pretrain without it.
  double attention_dropout = 0.0;
  double hidden_dropout = 0.0;
  MoeDesc moe;
  // Sliding-window attention (Mistral's sliding_window, Qwen2's use_sliding_window and
  // max_window_layers, transformers' layer_types): decoder layer i's window in tokens, 0 for full
  // attention; empty: every layer attends over the whole sequence.
  std::vector<int64_t> attention_window;
  // What reading the description assumed, for the plan's notes (e.g. config.json fields taken as
  // changing no parameter, FLOP or stored activation).
  std::vector<std::string> notes;

  bool is_moe() const { return moe.num_experts > 0; }
  // The window of decoder layer `layer`; 0: full attention.
  int64_t window_of(int64_t layer) const {
    return layer >= 0 && layer < static_cast<int64_t>(attention_window.size())
               ? attention_window[static_cast<size_t>(layer)]
               : 0;
  }
  // Whether decoder layer `layer` (from 0) has experts instead of the dense MLP.
  bool is_moe_layer(int64_t layer) const { return is_moe() && layer % moe.layer_frequency == 0; }
};

// The most decoder layers pipescope plans for: the largest published models have ~130, and a
// value far past that is a typo that would make per-layer work run for minutes.
inline constexpr int64_t kMostLayers = 1024;

// Fails with a message naming the first field that is out of range or inconsistent, e.g.
// "num_attention_heads (32) is not divisible by num_kv_heads (6)".
Status validate(const ModelDesc& model);

std::string_view to_string(MlpKind kind);
std::string_view to_string(NormKind kind);
std::string_view to_string(PositionKind kind);
std::optional<MlpKind> parse_mlp_kind(std::string_view text);            // "gelu" | "swiglu"
std::optional<NormKind> parse_norm_kind(std::string_view text);          // "layernorm" | "rmsnorm"
std::optional<PositionKind> parse_position_kind(std::string_view text);  // "rope" | "learned" | "alibi"

}  // namespace pipescope::models
