// Pieces the three emitters share: '#' comments wrapped to a readable width, the one-line
// summary of what was planned, and the closing list of what a framework cannot express.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/models/model_desc.h"
#include "pipescope/planner/framework_settings.h"
#include "pipescope/planner/stage_split.h"

namespace pipescope::planner::detail {

inline std::string num(int64_t value) { return std::to_string(value); }

// `text` as '# ' comment lines of at most ~100 columns; continuation lines indented by
// `hanging` more spaces (for a bullet).
std::string comment(const std::string& text, size_t hanging = 0);

// "llama2-13b; tp 1, pp 8, ...; suggested split 4, 5, ..., 5 decoder layers, recompute stages 0-7 full"
std::string plan_summary(const models::ModelDesc& model, const PlanOutcome& outcome);

// The not_expressible line for a plan whose memory is priced with the `planned` optimizer recipe
// when `framework` runs another at the ZeRO stage it is given; empty when they agree.
std::string recipe_mismatch(OptimizerRecipe planned, Framework framework, int zero_stage);

// A recompute setting a framework takes, priced on the suggested split.
struct PricedRecompute {
  UniformRecompute setting;
  PlanReport report;
};

// Of `candidates`, the fastest that fits on the suggested split, else the one with the least
// peak; nullopt without a pricer (or when pricing fails).
std::optional<PricedRecompute> fastest_expressible(const std::vector<UniformRecompute>& candidates,
                                                   const RecomputePricer* pricer);

// The settings of frameworks that recompute whole layers of every stage or none.
inline const std::vector<UniformRecompute> kWholeLayerSettings = {{RecomputeChoice::kNone, 0},
                                                                  {RecomputeChoice::kFull, 0}};

// Whether the plan is none on every stage, or full recomputation of every layer on every stage:
// what those frameworks express exactly.
bool whole_layers_only(const StageSplit& split, const CommonRecompute& common);

// "full recomputation of the first 3 decoder layers of every stage", "no recomputation", ...
std::string describe(const UniformRecompute& setting);

// What the emitted setting runs instead of the plan's per-stage recomputation, and its planned
// step time and peak against the plan's.
std::string planned_instead(const PricedRecompute& chosen, const PlanOutcome& outcome,
                            std::string_view framework);

// Appends the not_expressible list to the text as comments ("# Not expressible in ...: - ...").
void close_with_limits(FrameworkSettings& settings, Framework framework);

}  // namespace pipescope::planner::detail
