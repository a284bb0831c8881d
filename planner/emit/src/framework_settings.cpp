#include "pipescope/planner/framework_settings.h"

#include <cstdio>
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
                                const PlanOutcome& outcome, const RecomputePricer* pricer) {
  switch (framework) {
    case Framework::kMegatron: return emit_megatron(model, outcome, pricer);
    case Framework::kDeepSpeed: return emit_deepspeed(model, outcome, pricer);
    case Framework::kInternEvo: return emit_internevo(model, outcome, pricer);
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

std::string recipe_text(OptimizerRecipe recipe, int zero_stage) {
  switch (recipe) {
    case OptimizerRecipe::kMegatron:
      return "Megatron-LM's optimizer recipe (fp32 gradients: 6 + 12/dp bytes per parameter at ZeRO 1)";
    case OptimizerRecipe::kDeepSpeedBf16:
      return "DeepSpeed's BF16_Optimizer (bf16 and unsharded fp32 gradients: 8 + 12/dp bytes per parameter)";
    case OptimizerRecipe::kInternEvo:
      if (zero_stage == 3) {
        return "InternEvo's zero1.fsdp (torch FSDP and FSDPadaptOptimizer: 16/g bytes per parameter, g the "
               "zero1 group)";
      }
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
  return "This plan's memory is priced with " + recipe_text(planned, zero_stage) + "; " +
         std::string(display_name(framework)) + " runs " + recipe_text(runs, zero_stage) +
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

std::optional<PricedRecompute> fastest_expressible(const std::vector<UniformRecompute>& candidates,
                                                   const RecomputePricer* pricer) {
  if (pricer == nullptr) return std::nullopt;
  std::optional<PricedRecompute> best;
  for (const UniformRecompute& setting : candidates) {
    auto report = (*pricer)(setting);
    if (!report.ok()) return std::nullopt;
    const bool better = !best || (report->fits && !best->report.fits) ||
                        (report->fits == best->report.fits &&
                         (report->fits ? report->iteration_s < best->report.iteration_s
                                       : report->peak_memory_bytes < best->report.peak_memory_bytes));
    if (better) best = PricedRecompute{setting, std::move(*report)};
  }
  return best;
}

bool whole_layers_only(const StageSplit& split, const CommonRecompute& common) {
  if (!common.exact || common.mode == "selective") return false;
  if (common.mode == "none") return true;
  for (size_t s = 0; s < split.layers.size(); ++s) {
    if (s < split.full_recompute_layers.size() && split.full_recompute_layers[s] != split.layers[s])
      return false;
  }
  return true;
}

std::string describe(const UniformRecompute& setting) {
  switch (setting.mode) {
    case RecomputeChoice::kNone: return "no recomputation";
    case RecomputeChoice::kSelective: return "selective recomputation";
    case RecomputeChoice::kFull:
      return setting.block_layers > 0 ? "full recomputation of the first " + num(setting.block_layers) +
                                            " decoder layers of every stage"
                                      : "full recomputation of every layer";
    case RecomputeChoice::kAuto: break;
  }
  return "?";
}

std::string planned_instead(const PricedRecompute& chosen, const PlanOutcome& outcome,
                            std::string_view framework) {
  auto seconds = [](double s) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.3f s", s);
    return std::string(text);
  };
  auto gib = [](int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
    return std::string(text);
  };
  const PlanReport& r = chosen.report;
  return "These settings run " + describe(chosen.setting) + " instead, the " +
         (r.fits ? "fastest setting " + std::string(framework) + " takes that fits"
                 : "setting " + std::string(framework) + " takes with the least peak (none fits)") +
         " on the suggested split, planned: a " + seconds(r.iteration_s) + " step (the plan's " +
         seconds(outcome.suggested.iteration_s) + "), peak " + gib(r.peak_memory_bytes) + " (the plan's " +
         gib(outcome.suggested.peak_memory_bytes) + ", usable " + gib(outcome.capacity_bytes) + ").";
}

}  // namespace detail
}  // namespace pipescope::planner
