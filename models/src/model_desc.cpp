#include "pipescope/models/model_desc.h"

#include <string>
#include <utility>

namespace pipescope::models {

Status validate(const ModelDesc& m) {
  const auto bad = [&m](std::string_view field, const std::string& problem) {
    return Status(Error{"model '" + m.name + "': field '" + std::string(field) + "' " + problem});
  };
  const auto positive = [&](std::string_view field, int64_t value) {
    return value > 0 ? Status::Ok() : bad(field, "must be positive, got " + std::to_string(value));
  };
  const auto at_most = [&](std::string_view field, int64_t value, int64_t most) {
    return value <= most ? Status::Ok()
                         : bad(field, "is " + std::to_string(value) + ", above the " + std::to_string(most) +
                                          " pipescope plans for; is it a typo?");
  };
  constexpr int64_t kMostFfn = int64_t{1} << 21;
  // Upper limits far above any published model (the largest have ~130 decoder layers, hidden
  // sizes of 2^14-2^15, vocabularies of ~2^18): a value past them is a typo, and would make the
  // planner's per-layer work (a search over splits of num_layers) run for minutes.
  struct Limit {
    std::string_view field;
    int64_t value;
    int64_t most;
  };
  for (const Limit& f :
       {Limit{"vocab_size", m.vocab_size, int64_t{1} << 24},
        Limit{"hidden_size", m.hidden_size, int64_t{1} << 18}, Limit{"num_layers", m.num_layers, kMostLayers},
        Limit{"num_attention_heads", m.num_attention_heads, 16384},
        Limit{"num_kv_heads", m.num_kv_heads, 16384}, Limit{"head_dim", m.head_dim, 16384},
        Limit{"ffn_hidden_size", m.ffn_hidden_size, kMostFfn}}) {
    if (Status s = positive(f.field, f.value); !s) return s;
    if (Status s = at_most(f.field, f.value, f.most); !s) return s;
  }
  // Grouped-query attention shares each K/V head among num_attention_heads / num_kv_heads queries.
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    return bad("num_kv_heads", "(" + std::to_string(m.num_kv_heads) +
                                   ") does not divide num_attention_heads (" +
                                   std::to_string(m.num_attention_heads) + ")");
  }
  if (m.position == PositionKind::kLearned && m.max_position_embeddings <= 0) {
    return bad("max_position_embeddings", "must be positive for learned position embeddings");
  }
  for (const auto& [field, p] :
       {std::pair<std::string_view, double>{"attention_dropout", m.attention_dropout},
        {"hidden_dropout", m.hidden_dropout}}) {
    if (!(p >= 0.0 && p < 1.0)) return bad(field, "must be in [0, 1), got " + std::to_string(p));
  }
  if (!m.attention_window.empty()) {
    if (static_cast<int64_t>(m.attention_window.size()) != m.num_layers) {
      return bad("attention_window", "has " + std::to_string(m.attention_window.size()) + " entries for " +
                                         std::to_string(m.num_layers) + " layers");
    }
    for (int64_t w : m.attention_window) {
      if (w < 0) return bad("attention_window", "must not be negative, got " + std::to_string(w));
    }
  }
  const MoeDesc& e = m.moe;
  if (e.num_experts < 0) return bad("moe.num_experts", "must not be negative");
  if (e.num_experts == 0) {
    if (e.top_k != 0 || e.num_shared_experts != 0) {
      return bad(e.top_k != 0 ? "moe.top_k" : "moe.num_shared_experts", "is set but moe.num_experts is 0");
    }
    return Status::Ok();
  }
  if (Status s = at_most("moe.num_experts", e.num_experts, 16384); !s) return s;
  if (e.top_k < 1 || e.top_k > e.num_experts) {
    return bad("moe.top_k", "must be between 1 and moe.num_experts (" + std::to_string(e.num_experts) +
                                "), got " + std::to_string(e.top_k));
  }
  if (Status s = positive("moe.expert_ffn_hidden_size", e.expert_ffn_hidden_size); !s) return s;
  if (Status s = at_most("moe.expert_ffn_hidden_size", e.expert_ffn_hidden_size, kMostFfn); !s) return s;
  if (Status s = positive("moe.layer_frequency", e.layer_frequency); !s) return s;
  if (e.num_shared_experts < 0) return bad("moe.num_shared_experts", "must not be negative");
  if (e.num_shared_experts > 0) {
    if (Status s = positive("moe.shared_expert_ffn_hidden_size", e.shared_expert_ffn_hidden_size); !s)
      return s;
    if (Status s = at_most("moe.num_shared_experts", e.num_shared_experts, 1024); !s) return s;
    if (Status s = at_most("moe.shared_expert_ffn_hidden_size", e.shared_expert_ffn_hidden_size, kMostFfn);
        !s)
      return s;
  }
  return Status::Ok();
}

std::string_view to_string(MlpKind kind) { return kind == MlpKind::kGelu ? "gelu" : "swiglu"; }
std::string_view to_string(NormKind kind) { return kind == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"; }
std::string_view to_string(PositionKind kind) {
  switch (kind) {
    case PositionKind::kRope: return "rope";
    case PositionKind::kLearned: return "learned";
    case PositionKind::kAlibi: return "alibi";
  }
  return "?";
}

std::optional<MlpKind> parse_mlp_kind(std::string_view text) {
  if (text == "gelu") return MlpKind::kGelu;
  if (text == "swiglu") return MlpKind::kSwiglu;
  return std::nullopt;
}

std::optional<NormKind> parse_norm_kind(std::string_view text) {
  if (text == "layernorm") return NormKind::kLayerNorm;
  if (text == "rmsnorm") return NormKind::kRmsNorm;
  return std::nullopt;
}

std::optional<PositionKind> parse_position_kind(std::string_view text) {
  if (text == "rope") return PositionKind::kRope;
  if (text == "learned") return PositionKind::kLearned;
  if (text == "alibi") return PositionKind::kAlibi;
  return std::nullopt;
}

}  // namespace pipescope::models
