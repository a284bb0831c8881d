#include "pipescope/common/plan_schema.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "pipescope/common/json_document.h"

namespace pipescope::plan_schema {
namespace {

constexpr std::string_view kExpected = "'pipescope plan --json'";

// A field's path in the document: "suggested.stages[2]" and "forward_s" give
// "suggested.stages[2].forward_s"; a top-level field is its key.
std::string field_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// Reads the fields of one object, keeping the first problem: a required field that is missing or
// of the wrong type is named by its path in the document.
class FieldReader {
 public:
  FieldReader(std::string_view origin, std::string* error) : origin_(origin), error_(error) {}

  double number(const nlohmann::json& object, std::string_view key, const std::string& path) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number()) {
      fail(field_path(path, key) + " is missing or not a number");
      return 0;
    }
    return it->get<double>();
  }

  int64_t integer(const nlohmann::json& object, std::string_view key, const std::string& path) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) {
      fail(field_path(path, key) + " is missing or not an integer");
      return 0;
    }
    return it->get<int64_t>();
  }

  // An optional integer: absent or null is nullopt, present of another type is an error.
  std::optional<int64_t> optional_integer(const nlohmann::json& object, std::string_view key,
                                          const std::string& path) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer()) {
      fail(field_path(path, key) + " is not an integer");
      return std::nullopt;
    }
    return it->get<int64_t>();
  }

  // An optional object: absent or null is nullptr, present of another type is an error.
  const nlohmann::json* optional_object(const nlohmann::json& object, std::string_view key,
                                        const std::string& path) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    if (!it->is_object()) {
      fail(field_path(path, key) + " is not an object");
      return nullptr;
    }
    return &*it;
  }

  void fail(const std::string& problem) {
    if (error_->empty()) {
      *error_ =
          std::string(origin_) + ": " + problem + ": not a complete " + std::string(kExpected) + " output";
    }
  }

 private:
  std::string_view origin_;
  std::string* error_;
};

WorkByKind read_work(const nlohmann::json& pass, const std::string& path, FieldReader& read) {
  WorkByKind work;
  for (size_t k = 0; k < kWorkKindKeys.size(); ++k) {
    // launch_gap_s came with version 3: an older document's pass has none.
    if (kWorkKindKeys[k] == "launch_gap_s" && !pass.contains(kWorkKindKeys[k])) continue;
    work.s[k] = read.number(pass, kWorkKindKeys[k], path);
  }
  return work;
}

StageFigures read_stage(const nlohmann::json& stage, const std::string& path, FieldReader& read) {
  StageFigures s;
  s.layers = read.integer(stage, "layers", path);
  s.forward_s = read.number(stage, "forward_s", path);
  s.backward_s = read.number(stage, "backward_s", path);
  s.peak_memory_bytes = read.number(stage, "peak_memory_bytes", path);
  s.allocated_bytes = read.number(stage, "allocated_bytes", path);
  s.optimizer_s = read.number(stage, "optimizer_s", path);
  if (const nlohmann::json* work = read.optional_object(stage, "work", path)) {
    const nlohmann::json* forward = read.optional_object(*work, "forward", path + ".work");
    const nlohmann::json* backward = read.optional_object(*work, "backward", path + ".work");
    if (forward == nullptr || backward == nullptr) {
      read.fail(path + ".work needs both forward and backward");
    } else {
      s.forward_work = read_work(*forward, path + ".work.forward", read);
      s.backward_work = read_work(*backward, path + ".work.backward", read);
    }
  }
  return s;
}

ConfigFigures read_config(const nlohmann::json& config, FieldReader& read) {
  const std::string path = "inputs.config";
  ConfigFigures c;
  c.tp = read.optional_integer(config, "tp", path);
  c.pp = read.optional_integer(config, "pp", path);
  c.dp = read.optional_integer(config, "dp", path);
  c.micro_batch = read.optional_integer(config, "micro_batch", path);
  c.micro_batches = read.optional_integer(config, "micro_batches", path);
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

  std::string error;
  FieldReader read(origin, &error);
  PlanSide plan;
  plan.schema_version = version.get<int>();
  plan.side = key;
  const auto baseline = doc.find("baseline");
  plan.baseline_is_given_split = baseline != doc.end() && *baseline == kGivenSplitBaseline;
  plan.figures.iteration_s = read.number(*figures, "iteration_s", key);
  plan.figures.bubble_fraction = read.number(*figures, "bubble_fraction", key);
  const nlohmann::json& stages = (*figures)["stages"];
  for (size_t k = 0; k < stages.size() && error.empty(); ++k) {
    const std::string path = key + ".stages[" + std::to_string(k) + "]";
    if (!stages[k].is_object()) {
      read.fail(path + " is not an object");
      break;
    }
    plan.figures.stages.push_back(read_stage(stages[k], path, read));
  }
  if (const nlohmann::json* inputs = read.optional_object(doc, "inputs", "")) {
    if (const nlohmann::json* config = read.optional_object(*inputs, "config", "inputs"))
      plan.config = read_config(*config, read);
    const auto arguments = inputs->find("arguments");
    if (arguments != inputs->end() && !arguments->is_null()) plan.arguments = arguments->dump();
  }
  if (const nlohmann::json* overheads = read.optional_object(doc, "memory_overheads", "")) {
    plan.memory_overheads = MemoryOverheads{read.number(*overheads, "cuda_context_bytes", "memory_overheads"),
                                            read.number(*overheads, "nccl_buffer_bytes", "memory_overheads")};
  }
  if (!error.empty()) return Error(error);
  return plan;
}

}  // namespace pipescope::plan_schema
