// Search requests on bundled models and clusters, and a tiny model whose feasible set is small
// enough to work out by hand.
#pragma once

#include <string>

#include "pipescope/planner/search.h"

namespace pipescope::planner::test {

// Fails the calling test when a bundled piece does not load.
SearchRequest request(const std::string& model, const std::string& cluster, int64_t gpus,
                      int64_t global_batch, int64_t seq_length);

// 4 layers, 6 heads of 64 (hidden 384), FFN 1536, vocabulary 1000: TP 1, 2 and 3 divide its
// heads, TP 4 and 8 do not. A few MB of weights: every layout fits on any GPU.
models::ModelDesc tiny_model();

}  // namespace pipescope::planner::test
