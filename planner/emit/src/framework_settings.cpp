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

namespace {

OptimizerRecipe framework_recipe(Framework framework, int zero_stage) {
  switch (framework) {
    case Framework::kMegatron: return OptimizerRecipe::kMegatron;
    // bf16 at ZeRO 0 or 1 runs BF16_Optimizer; DeepSpeed's ZeRO 2/3 optimizer keeps fp32 gradient
    // partitions as Megatron-LM's recipe does.
    case Framework::kDeepSpeed:
      return zero_stage <= 1 ? OptimizerRecipe::kDeepSpeedBf16 : OptimizerRecipe::kMegatron;
    case Framework::kInternEvo: return OptimizerRecipe::kInternEvo;
  }
  return OptimizerRecipe::kMegatron;
}

std::string recipe_text(OptimizerRecipe recipe) {
  switch (recipe) {
    case OptimizerRecipe::kMegatron:
      return "Megatron-LM's optimizer recipe (fp32 gradients: 6 + 12/dp bytes per parameter at ZeRO 1)";
    case OptimizerRecipe::kDeepSpeedBf16:
      return "DeepSpeed's BF16_Optimizer (bf16 and unsharded fp32 gradients: 8 + 12/dp bytes per parameter)";
    case OptimizerRecipe::kInternEvo:
      return "InternEvo's HybridZeroOptimizer (bf16 gradients: 4 + 12/g bytes per parameter, g the zero1 "
             "group)";
  }
  return "?";
}

}  // namespace

std::string recipe_mismatch(OptimizerRecipe planned, Framework framework, int zero_stage) {
  const OptimizerRecipe runs = framework_recipe(framework, zero_stage);
  if (runs == planned) return {};
  // --emit only writes settings; the plan's memory stays what was asked for.
  return "This plan's memory is priced with " + recipe_text(planned) + "; " +
         std::string(display_name(framework)) + " runs " + recipe_text(runs) +
         ": `pipescope plan ... --optimizer " + std::string(to_string(runs)) + "` predicts its memory.";
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
