// Pieces the three emitters share: '#' comments wrapped to a readable width, the one-line
// summary of what was planned, and the closing list of what a framework cannot express.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pipescope/models/model_desc.h"
#include "pipescope/planner/framework_settings.h"

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

// Appends the not_expressible list to the text as comments ("# Not expressible in ...: - ...").
void close_with_limits(FrameworkSettings& settings, Framework framework);

}  // namespace pipescope::planner::detail
