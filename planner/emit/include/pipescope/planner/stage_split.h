// A plan's pipeline split and per-stage recompute as the frameworks see them: decoder layers per
// stage, and the few forms frameworks take for them (Megatron-LM's layout string and its
// first/last-stage layer counts; one recompute mode for every stage).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/planner/plan.h"

namespace pipescope::planner {

struct StageSplit {
  std::vector<int> layers;  // decoder layers per pipeline stage, first to last
  // Per stage: none, selective, full, or "full k/L" when full recomputation covers only the
  // first k of the stage's L decoder layers.
  std::vector<std::string> recompute;
  std::vector<int> full_recompute_layers;  // per stage: k of "full k/L", L of "full", 0 otherwise
  std::vector<int> unit_boundaries;        // p + 1 entries: stage s holds units [b_s, b_s+1)
};
StageSplit stage_split(const PlanReport& plan);

bool all_equal(const std::vector<int>& layers);

// Megatron-LM's --pipeline-model-parallel-layout for a split without virtual stages
// (pipeline_layout_string()): {4, 5, 5, 2} -> "Et*4|t*5|t*5|t*2L"; {0, 3, 1} -> "E|t*3|tL".
std::string megatron_layout(const std::vector<int>& layers);

// Megatron-LM's --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers: each
// at least 1 when given, the layers left over spread evenly on the middle stages. A flag is
// left out when its stage gets the even share anyway.
struct FirstLastSplit {
  std::optional<int> first;
  std::optional<int> last;
  std::vector<int> layers;  // the split the flags give
  bool exact = false;       // layers equals the requested split
};
// The flags for `layers` when they express it; otherwise those of the expressible split closest
// to it (least largest per-stage difference, then least total difference, then the one that
// keeps the first stage's count). nullopt when no split is expressible (fewer layers than
// stages).
std::optional<FirstLastSplit> megatron_first_last(const std::vector<int>& layers);

// The same flags for an interleaved layout (chunks in model order, chunk g on stage g mod `pp`):
// Megatron-LM gives each of a stage's `vpp` chunks the stage's count / vpp, in every round of
// chunks alike (megatron/core/transformer/transformer_layer.py, get_transformer_layer_offset),
// with --num-virtual-stages-per-pipeline-rank. nullopt unless that gives `chunks` exactly.
std::optional<FirstLastSplit> megatron_first_last_interleaved(const std::vector<int64_t>& chunks, int pp,
                                                              int vpp);

// One recompute mode for every stage: the plan's when all stages share one, otherwise the
// strongest any stage uses (full > selective > none; "full k/L" counts as full of every layer),
// which keeps every stage's activations at or below the plan's and costs time on the stages that
// planned less.
struct CommonRecompute {
  std::string mode;  // none, selective or full
  bool exact = true;
};
CommonRecompute common_recompute(const std::vector<std::string>& per_stage);

// "stages 0-1 full, stages 2-7 none": runs of equal modes.
std::string describe_recompute(const std::vector<std::string>& per_stage);
// "4, 5, 5, 6"
std::string join_layers(const std::vector<int>& layers);

}  // namespace pipescope::planner
