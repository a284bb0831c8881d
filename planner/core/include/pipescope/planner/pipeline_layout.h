// Megatron-LM's pipeline layout strings (--pipeline-model-parallel-layout), read and written:
// the model's chunks in model order, separated by '|', each a run of E (the embedding), t (a
// decoder layer) and L (the output layer and loss); X*N repeats a letter, (...)*N a group of
// letters and '|'; commas are cosmetic. With p pipeline ranks and c chunks, chunk g runs on rank
// g mod p and c / p is the virtual pipeline size. Read from NVIDIA/Megatron-LM
// megatron/core/transformer/pipeline_parallel_layer_layout.py (parse_str_to_list,
// validate_layer_layout). E must be the first layer and L the last, once each; pipescope does
// not model multi-token-prediction layers (m).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::planner {

// The decoder layers of each chunk, in model order; the embedding is in the first chunk and the
// output layer in the last. Errors name what is wrong, e.g. "'m' at position 12: ...".
Expected<std::vector<int64_t>> parse_pipeline_layout(std::string_view text);

// The layout string of `chunk_layers` (decoder layers per chunk, model order): "Et*4|t*5|t*5|t*2L"
// for {4, 5, 5, 2}; three or more equal middle chunks in a row as one group, "E|(t|)*126L" for
// {0, 1 x 126, 0}. parse_pipeline_layout() reads it back.
std::string pipeline_layout_string(const std::vector<int64_t>& chunk_layers);

}  // namespace pipescope::planner
