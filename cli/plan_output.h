// What `pipescope plan` prints: the uniform and the suggested split side by side, stage by stage,
// with their totals, the gain in peak memory and the cost in step time, and for a plan that does
// not fit what would make it fit; or the same as one JSON document (kPlanSchemaVersion).
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "pipescope/models/model_desc.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/plan.h"

namespace pipescope::cli {

// 2 (2026-11-27): each side's `layout` string and each stage's `chunk_layers`; `inputs.arguments`
// gained `pipeline_layout`. 3 (2026-11-28): every figure of work by kind gained `launch_gap_s`.
// Readers of older versions read the newer ones' other fields unchanged.
inline constexpr int kPlanSchemaVersion = 3;

struct PlanPrintout {
  models::ModelDesc model;
  planner::Cluster cluster;
  planner::CalibrationProfile profile;
  std::string calibration_origin;  // "bundled" or the --calibration path
  planner::PlanOutcome outcome;
  std::string emit_framework;        // --emit name, empty when not asked
  std::string emit_text;             // the framework settings
  nlohmann::ordered_json arguments;  // the plan's flags (plan_options.h), for planning it again
};

void write_plan_text(std::ostream& out, const PlanPrintout& plan);

// The JSON document, pretty-printed, with a final newline.
std::string plan_json(const PlanPrintout& plan);

}  // namespace pipescope::cli
