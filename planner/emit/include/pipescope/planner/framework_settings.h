// Ready-to-paste settings that make a framework run a plan's suggested split: Megatron-LM
// command-line flags, a DeepSpeed config with PipelineModule arguments, an InternEvo config.
// Each framework expresses only part of what a plan can hold (an uneven split, a recompute mode
// per stage, hierarchical ZeRO); what it cannot express is said plainly, with the closest
// setting it does take. The flags and keys were checked against each framework's source; the
// .cpp files name the file and commit.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/models/model_desc.h"
#include "pipescope/planner/plan.h"

namespace pipescope::planner {

enum class Framework { kMegatron, kDeepSpeed, kInternEvo };

std::optional<Framework> parse_framework(std::string_view name);  // megatron | deepspeed | internevo
std::string_view to_string(Framework framework);
std::string_view display_name(Framework framework);  // "Megatron-LM", "DeepSpeed", "InternEvo"

struct FrameworkSettings {
  // Ready to paste: a bash array of flags (Megatron-LM), a JSON config plus Python (DeepSpeed),
  // Python dicts (InternEvo). '#' comment lines inside say what could not be expressed.
  std::string text;
  // What of the plan the framework cannot express, one sentence each, closest setting included.
  std::vector<std::string> not_expressible;
};

// `pricer` (uniform_recompute_pricer of the plan's inputs and suggested split): with it, settings
// that cannot express the plan's per-stage recomputation are the fastest setting the framework
// takes that fits on the suggested split, planned, and say what it costs; without it, the
// closest setting, unplanned, said as such.

// `outcome` from make_plan, whose config is resolved; `model` the model it was planned for.
FrameworkSettings emit_settings(Framework framework, const models::ModelDesc& model,
                                const PlanOutcome& outcome, const RecomputePricer* pricer = nullptr);

FrameworkSettings emit_megatron(const models::ModelDesc& model, const PlanOutcome& outcome,
                                const RecomputePricer* pricer = nullptr);
FrameworkSettings emit_deepspeed(const models::ModelDesc& model, const PlanOutcome& outcome,
                                 const RecomputePricer* pricer = nullptr);
FrameworkSettings emit_internevo(const models::ModelDesc& model, const PlanOutcome& outcome,
                                 const RecomputePricer* pricer = nullptr);

}  // namespace pipescope::planner
