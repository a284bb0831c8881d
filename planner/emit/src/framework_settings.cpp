#include "pipescope/planner/framework_settings.h"

#include <sstream>

#include "pipescope/planner/stage_split.h"
#include "settings_text.h"

namespace pipescope::planner {

std::optional<Framework> parse_framework(std::string_view name) {
  if (name == "megatron") return Framework::kMegatron;
  if (name == "deepspeed") return Framework::kDeepSpeed;
  if (name == "internevo") return Framework::kInternEvo;
  return std::nullopt;
}

std::string_view to_string(Framework framework) {
  switch (framework) {
    case Framework::kMegatron: return "megatron";
    case Framework::kDeepSpeed: return "deepspeed";
    case Framework::kInternEvo: return "internevo";
  }
  return "?";
}

std::string_view display_name(Framework framework) {
  switch (framework) {
    case Framework::kMegatron: return "Megatron-LM";
    case Framework::kDeepSpeed: return "DeepSpeed";
    case Framework::kInternEvo: return "InternEvo";
  }
  return "?";
}

FrameworkSettings emit_settings(Framework framework, const models::ModelDesc& model,
                                const PlanOutcome& outcome) {
  switch (framework) {
    case Framework::kMegatron: return emit_megatron(model, outcome);
    case Framework::kDeepSpeed: return emit_deepspeed(model, outcome);
    case Framework::kInternEvo: return emit_internevo(model, outcome);
  }
  return {};
}

namespace detail {

std::string comment(const std::string& text, size_t hanging) {
  constexpr size_t kWidth = 100;
  std::istringstream words(text);
  std::string out, line = "#", word;
  bool line_empty = true;
  while (words >> word) {
    if (!line_empty && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = "#" + std::string(hanging, ' ');
      line_empty = true;
    }
    line += " " + word;
    line_empty = false;
  }
  if (!line_empty) out += line + "\n";
  return out;
}

std::string plan_summary(const models::ModelDesc& model, const PlanOutcome& outcome) {
  const StageSplit split = stage_split(outcome.suggested);
  return model.name + "; " + describe(outcome.config) + "; suggested split " + join_layers(split.layers) +
         " decoder layers, recompute " + describe_recompute(split.recompute);
}

void close_with_limits(FrameworkSettings& settings, Framework framework) {
  if (settings.not_expressible.empty()) {
    settings.text += "# " + std::string(display_name(framework)) + " expresses all of this plan.\n";
    return;
  }
  settings.text += "# Not expressible in " + std::string(display_name(framework)) + ":\n";
  for (const std::string& limit : settings.not_expressible) settings.text += comment("- " + limit, 2);
}

}  // namespace detail
}  // namespace pipescope::planner
