// The plan document `pipescope plan --json` prints (its schema: common/'s plan_schema.h, which
// readers read it through). The figures come from the plan; what the command line adds (its
// arguments, the sentences it writes, the framework settings) comes in PlanDocumentText.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipescope/models/model_desc.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/parallel_config.h"
#include "pipescope/planner/plan.h"

namespace pipescope::planner {

struct PlanDocumentText {
  std::string calibration_gpu;                        // the profile's GPU
  std::string calibration_origin;                     // "bundled" or the --calibration path
  const nlohmann::ordered_json* arguments = nullptr;  // the plan's flags, to plan it again; none: left out
  std::vector<std::string> notes;
  std::string optimality;                       // whether the suggested split is proven optimal
  std::vector<std::string> suggestion_changes;  // per PlanOutcome::suggestions, the flags that differ
  std::string emit_framework;                   // --emit name; empty: left out
  std::string emit_text;
};

// A configuration's fields, as the plan's inputs.config and each of search's ranked entries give
// them.
nlohmann::ordered_json config_json(const ParallelConfig& config);

// The whole document (plan_schema::kPlanSchemaVersion).
nlohmann::ordered_json plan_json(const models::ModelDesc& model, const Cluster& cluster,
                                 const PlanOutcome& outcome, const PlanDocumentText& text);

}  // namespace pipescope::planner
