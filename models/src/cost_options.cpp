#include "pipescope/models/cost_options.h"

#include <string>

namespace pipescope::models {

std::string_view to_string(RecomputeMode mode) {
  switch (mode) {
    case RecomputeMode::kNone: return "none";
    case RecomputeMode::kSelective: return "selective";
    case RecomputeMode::kFull: return "full";
  }
  return "none";
}

std::optional<RecomputeMode> parse_recompute_mode(std::string_view text) {
  if (text == "none") return RecomputeMode::kNone;
  if (text == "selective") return RecomputeMode::kSelective;
  if (text == "full") return RecomputeMode::kFull;
  return std::nullopt;
}

Status check_cost_options(const ModelDesc& m, const CostOptions& o) {
  if (Status s = validate(m); !s) return s;
  for (const auto& [name, value] :
       {std::pair<std::string_view, int64_t>{"micro batch size", o.micro_batch_size},
        {"sequence length", o.seq_length},
        {"tensor parallel size", o.tensor_parallel},
        {"expert parallel size", o.expert_parallel},
        {"make_vocab_size_divisible_by", o.make_vocab_size_divisible_by}}) {
    if (value <= 0) return Error{std::string(name) + " must be positive, got " + std::to_string(value)};
  }
  const int64_t t = o.tensor_parallel;
  const auto divides = [&](std::string_view what, int64_t value, std::string_view by, int64_t divisor) {
    if (value % divisor == 0) return Status::Ok();
    return Status(Error{"model '" + m.name + "': " + std::string(what) + " (" + std::to_string(value) +
                        ") is not divisible by the " + std::string(by) + " (" + std::to_string(divisor) +
                        ")"});
  };
  if (Status s = divides("num_attention_heads", m.num_attention_heads, "tensor parallel size", t); !s)
    return s;
  // Megatron splits K/V heads (query groups) over TP ranks and does not replicate them.
  if (Status s = divides("num_kv_heads", m.num_kv_heads, "tensor parallel size", t); !s) return s;
  if (Status s = divides("ffn_hidden_size", m.ffn_hidden_size, "tensor parallel size", t); !s) return s;
  if (m.is_moe()) {
    const MoeDesc& e = m.moe;
    if (Status s = divides("moe.expert_ffn_hidden_size", e.expert_ffn_hidden_size, "tensor parallel size", t);
        !s) {
      return s;
    }
    const int64_t shared = e.num_shared_experts * e.shared_expert_ffn_hidden_size;
    if (Status s = divides("shared experts' ffn size", shared, "tensor parallel size", t); !s) return s;
    if (Status s = divides("moe.num_experts", e.num_experts, "expert parallel size", o.expert_parallel); !s)
      return s;
  } else if (o.expert_parallel != 1) {
    return Error{"model '" + m.name + "' has no experts, so the expert parallel size must be 1"};
  }
  if (o.sequence_parallel && o.seq_length % t != 0) {
    return Error{"sequence length (" + std::to_string(o.seq_length) +
                 ") is not divisible by the tensor parallel size (" + std::to_string(t) +
                 "), which sequence parallelism needs"};
  }
  return Status::Ok();
}

int64_t padded_vocab_size(const ModelDesc& m, const CostOptions& o) {
  const int64_t multiple = o.make_vocab_size_divisible_by * o.tensor_parallel;
  return (m.vocab_size + multiple - 1) / multiple * multiple;
}

}  // namespace pipescope::models
