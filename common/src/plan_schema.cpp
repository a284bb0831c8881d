#include "pipescope/common/plan_schema.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "pipescope/common/json_document.h"
#include "pipescope/common/json_fields.h"

namespace pipescope::plan_schema {
namespace {

constexpr std::string_view kExpected = "'pipescope plan --json'";

WorkByKind read_work(const nlohmann::json& pass, const std::string& path, JsonFieldReader& read) {
  WorkByKind work;
  for (size_t k = 0; k < kWorkKindKeys.size(); ++k) {
    // launch_gap_s came with version 3: an older document's pass has none.
    work.s[k] = kWorkKindKeys[k] == "launch_gap_s"
                    ? read.optional_number(pass, kWorkKindKeys[k], path).value_or(0)
                    : read.number(pass, kWorkKindKeys[k], path);
  }
  return work;
}

StageFigures read_stage(const nlohmann::json& stage, const std::string& path, JsonFieldReader& read) {
  StageFigures s;
  s.layers = read.integer(stage, "layers", path, JsonRange::kNonNegative);
  s.forward_s = read.number(stage, "forward_s", path, JsonRange::kNonNegative);
  s.backward_s = read.number(stage, "backward_s", path, JsonRange::kNonNegative);
  s.peak_memory_bytes = read.number(stage, "peak_memory_bytes", path, JsonRange::kNonNegative);
  s.allocated_bytes = read.number(stage, "allocated_bytes", path, JsonRange::kNonNegative);
  s.optimizer_s = read.number(stage, "optimizer_s", path, JsonRange::kNonNegative);
  // Work by kind came during version 1: an early document's stages have none.
  if (const nlohmann::json* work = read.optional_object(stage, "work", path)) {
    const std::string work_path = field_path(path, "work");
    const nlohmann::json* forward = read.object(*work, "forward", work_path);
    const nlohmann::json* backward = read.object(*work, "backward", work_path);
    if (forward != nullptr && backward != nullptr) {
      s.forward_work = read_work(*forward, field_path(work_path, "forward"), read);
      s.backward_work = read_work(*backward, field_path(work_path, "backward"), read);
    }
  }
  return s;
}

ConfigFigures read_config(const nlohmann::json& config, JsonFieldReader& read) {
  const std::string path = "inputs.config";
  ConfigFigures c;
  c.tp = read.optional_integer(config, "tp", path, JsonRange::kPositive);
  c.pp = read.optional_integer(config, "pp", path, JsonRange::kPositive);
  c.dp = read.optional_integer(config, "dp", path, JsonRange::kPositive);
  c.micro_batch = read.optional_integer(config, "micro_batch", path, JsonRange::kPositive);
  c.micro_batches = read.optional_integer(config, "micro_batches", path, JsonRange::kPositive);
  return c;
}

}  // namespace

double WorkByKind::of(std::string_view key) const {
  const auto* at = std::find(kWorkKindKeys.begin(), kWorkKindKeys.end(), key);
  return at == kWorkKindKeys.end() ? 0.0 : s[static_cast<size_t>(at - kWorkKindKeys.begin())];
}

Expected<PlanSide> read_plan_side(std::string_view text, std::string_view origin, std::string_view side) {
  const Expected<nlohmann::json> parsed = parse_json_object(text, origin);
  if (!parsed) return Error(parsed.error().message + " (expected " + std::string(kExpected) + " output)");
  const nlohmann::json& doc = *parsed;
  const std::string key(side);
  const auto figures = doc.find(key);
  if (!doc.contains("schema_version") || figures == doc.end() || !figures->is_object() ||
      !figures->contains("stages") || !(*figures)["stages"].is_array()) {
    return Error(std::string(origin) + " is not the output of " + std::string(kExpected) +
                 " (no schema_version / " + key + ".stages)");
  }
  const nlohmann::json& version = doc["schema_version"];
  if (!version.is_number_integer() || version.get<int64_t>() < kOldestReadablePlanSchemaVersion ||
      version.get<int64_t>() > kPlanSchemaVersion) {
    return Error(std::string(origin) + " has plan schema_version " + version.dump() +
                 "; this pipescope reads versions " + std::to_string(kOldestReadablePlanSchemaVersion) +
                 " to " + std::to_string(kPlanSchemaVersion) + " (plan it again with this build's " +
                 std::string(kExpected) + ")");
  }

  JsonFieldReader read("plan '" + std::string(origin) + "'");
  PlanSide plan;
  plan.schema_version = version.get<int>();
  plan.side = key;
  const auto baseline = doc.find("baseline");
  plan.baseline_is_given_split = baseline != doc.end() && *baseline == kGivenSplitBaseline;
  plan.figures.iteration_s = read.number(*figures, "iteration_s", key, JsonRange::kNonNegative);
  plan.figures.bubble_fraction = read.number(*figures, "bubble_fraction", key, JsonRange::kNonNegative);
  const nlohmann::json& stages = (*figures)["stages"];
  for (size_t k = 0; k < stages.size() && read.ok(); ++k) {
    const std::string path = index_path(key + ".stages", k);
    if (read.expect_object(stages[k], path)) plan.figures.stages.push_back(read_stage(stages[k], path, read));
  }
  if (const nlohmann::json* inputs = read.optional_object(doc, "inputs", "")) {
    if (const nlohmann::json* config = read.optional_object(*inputs, "config", "inputs"))
      plan.config = read_config(*config, read);
    const auto arguments = inputs->find("arguments");
    if (arguments != inputs->end() && !arguments->is_null()) plan.arguments = arguments->dump();
  }
  // memory_overheads came during version 1.
  if (const nlohmann::json* overheads = read.optional_object(doc, "memory_overheads", "")) {
    plan.memory_overheads = MemoryOverheads{
        read.number(*overheads, "cuda_context_bytes", "memory_overheads", JsonRange::kNonNegative),
        read.number(*overheads, "nccl_buffer_bytes", "memory_overheads", JsonRange::kNonNegative)};
  }
  if (!read.ok()) return read.error();
  return plan;
}

}  // namespace pipescope::plan_schema
