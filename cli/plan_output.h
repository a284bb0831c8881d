// What `pipescope plan` prints: the uniform and the suggested split side by side, stage by stage,
// with their totals, the gain in peak memory and the cost in step time, and for a plan that does
// not fit what would make it fit; or the same as one JSON document (planner/plan_json.h writes it;
// common/'s plan_schema.h is its schema).
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "pipescope/models/model_desc.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/plan.h"

namespace pipescope::cli {

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
