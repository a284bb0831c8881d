// How one micro-batch runs on one rank: what the per-rank cost functions (parameter_count.h,
// flop_count.h, activation_memory.h) need beyond the model. The layout is Megatron-LM's:
// tensor parallelism splits attention heads and the FFN dimension (Shoeybi et al. 2019),
// sequence parallelism splits the rest of the layer along the sequence (Korthikanti et al.
// 2022, section 4.2.2), experts are spread over expert-parallel ranks and split over TP inside.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "pipescope/common/expected.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models {

// Korthikanti et al. 2022: none stores everything; selective recomputes the attention core
// (Q·K^T, softmax, dropout, scores·V) in backward; full keeps only each layer's input and
// reruns the layer's forward.
enum class RecomputeMode { kNone, kSelective, kFull };

std::string_view to_string(RecomputeMode mode);
std::optional<RecomputeMode> parse_recompute_mode(std::string_view text);  // "none"|"selective"|"full"

struct CostOptions {
  int64_t micro_batch_size = 1;    // b
  int64_t seq_length = 2048;       // s
  int64_t tensor_parallel = 1;     // t
  bool sequence_parallel = false;  // needs t > 1 to make a difference
  int64_t expert_parallel = 1;     // routed experts spread over this many ranks
  bool flash_attention = false;    // fused attention (Dao et al. 2022): no s x s tensor is stored
  RecomputeMode recompute = RecomputeMode::kNone;
  // Megatron's --make-vocab-size-divisible-by: the embedding and the logits are padded to a
  // multiple of this times t so that each TP rank gets an equal slice.
  int64_t make_vocab_size_divisible_by = 128;
};

// Fails naming what does not divide, the way Megatron-LM refuses to start: attention heads,
// kv heads, ffn (dense, expert and shared) by t; s by t under sequence parallelism; experts
// by expert_parallel; and non-positive sizes. The cost functions assume this passed.
Status check_cost_options(const ModelDesc& model, const CostOptions& options);

// The vocabulary as the embedding and LM head hold it: vocab_size rounded up to a multiple of
// make_vocab_size_divisible_by * t (50257 -> 50304 for GPT-3 at t = 1).
int64_t padded_vocab_size(const ModelDesc& model, const CostOptions& options);

}  // namespace pipescope::models
