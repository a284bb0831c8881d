#include "pipescope/planner/stage_split.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "pipescope/planner/pipeline_layout.h"

namespace pipescope::planner {
namespace {

int strength(const std::string& mode) { return mode.rfind("full", 0) == 0 ? 2 : mode == "selective" ? 1 : 0; }

}  // namespace

StageSplit stage_split(const PlanReport& plan) {
  StageSplit split;
  for (const StageReport& s : plan.stages) {
    split.layers.push_back(s.layers);
    // A full stage that names no count recomputes all its layers.
    const bool partial =
        s.recompute == "full" && s.full_recompute_layers > 0 && s.full_recompute_layers < s.layers;
    split.recompute.push_back(partial ? "full " + std::to_string(s.full_recompute_layers) + "/" +
                                            std::to_string(s.layers)
                                      : s.recompute);
    split.full_recompute_layers.push_back(s.recompute != "full" ? 0
                                          : partial             ? s.full_recompute_layers
                                                                : s.layers);
    split.unit_boundaries.push_back(s.first_unit);
  }
  if (!plan.stages.empty()) split.unit_boundaries.push_back(plan.stages.back().end_unit);
  return split;
}

bool all_equal(const std::vector<int>& layers) {
  return std::adjacent_find(layers.begin(), layers.end(), std::not_equal_to<>()) == layers.end();
}

std::string megatron_layout(const std::vector<int>& layers) {
  return pipeline_layout_string(std::vector<int64_t>(layers.begin(), layers.end()));
}

std::optional<FirstLastSplit> megatron_first_last(const std::vector<int>& layers) {
  const int p = static_cast<int>(layers.size());
  int total = 0;
  for (int l : layers) total += l;
  if (p == 0 || total < p) return std::nullopt;
  if (p == 1) return FirstLastSplit{std::nullopt, std::nullopt, layers, true};

  // Every expressible split is (first, middle x (p - 2), last) with all counts >= 1; search them
  // all (a model has at most a few hundred layers).
  FirstLastSplit best;
  int best_max = std::numeric_limits<int>::max(), best_sum = 0;
  bool best_keeps_first = false;
  for (int first = 1; first <= total; ++first) {
    for (int last = 1; first + last <= total; ++last) {
      const int rest = total - first - last;
      int middle = 0;
      if (p == 2) {
        if (rest != 0) continue;
      } else {
        if (rest % (p - 2) != 0 || rest / (p - 2) < 1) continue;
        middle = rest / (p - 2);
      }
      std::vector<int> candidate(static_cast<size_t>(p), middle);
      candidate.front() = first;
      candidate.back() = last;
      int worst = 0, sum = 0;
      for (int s = 0; s < p; ++s) {
        const int d = std::abs(candidate[static_cast<size_t>(s)] - layers[static_cast<size_t>(s)]);
        worst = std::max(worst, d);
        sum += d;
      }
      const bool keeps_first = first == layers.front();
      const bool better = worst < best_max || (worst == best_max && sum < best_sum) ||
                          (worst == best_max && sum == best_sum && keeps_first && !best_keeps_first);
      if (!better) continue;
      best_max = worst;
      best_sum = sum;
      best_keeps_first = keeps_first;
      best.layers = candidate;
      // Megatron-LM spreads what the given flags leave evenly, so a stage with the even share
      // needs no flag; with two stages, the first count alone fixes the split.
      best.first = (p == 2 ? first != last : first != middle) ? std::optional<int>(first) : std::nullopt;
      best.last = (p > 2 && last != middle) ? std::optional<int>(last) : std::nullopt;
    }
  }
  best.exact = best.layers == layers;
  return best;
}

std::optional<FirstLastSplit> megatron_first_last_interleaved(const std::vector<int64_t>& chunks, int pp,
                                                              int vpp) {
  if (pp < 1 || vpp < 1 || chunks.size() != static_cast<size_t>(pp) * static_cast<size_t>(vpp))
    return std::nullopt;
  std::vector<int> per_stage(static_cast<size_t>(pp));
  for (size_t g = 0; g < chunks.size(); ++g) {
    const size_t stage = g % static_cast<size_t>(pp);
    if (chunks[g] != chunks[stage]) return std::nullopt;  // every round alike
    per_stage[stage] = static_cast<int>(chunks[g]) * vpp;
  }
  auto split = megatron_first_last(per_stage);
  if (!split || !split->exact) return std::nullopt;
  return split;
}

CommonRecompute common_recompute(const std::vector<std::string>& per_stage) {
  CommonRecompute common{"none", true};
  if (per_stage.empty()) return common;
  int strongest = 0;
  for (const std::string& mode : per_stage) {
    if (mode != per_stage.front() || (mode != "none" && mode != "selective" && mode != "full")) {
      common.exact = false;
    }
    strongest = std::max(strongest, strength(mode));
  }
  common.mode = strongest == 2 ? "full" : strongest == 1 ? "selective" : "none";
  return common;
}

std::string describe_recompute(const std::vector<std::string>& per_stage) {
  std::string text;
  for (size_t s = 0; s < per_stage.size();) {
    size_t end = s;
    while (end + 1 < per_stage.size() && per_stage[end + 1] == per_stage[s]) ++end;
    if (!text.empty()) text += ", ";
    text +=
        end == s ? "stage " + std::to_string(s) : "stages " + std::to_string(s) + "-" + std::to_string(end);
    text += " " + per_stage[s];
    s = end + 1;
  }
  return text;
}

std::string join_layers(const std::vector<int>& layers) {
  std::string text;
  for (size_t s = 0; s < layers.size(); ++s) text += (s > 0 ? ", " : "") + std::to_string(layers[s]);
  return text;
}

}  // namespace pipescope::planner
