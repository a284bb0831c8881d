// The per-unit costs a search screens configurations with, built from the planner's own cost
// model on a model cut down to one period of its layer kinds. Decoder layers of one kind cost the
// same on every position (the cost model prices a layer from its kind alone: dense, or MoE under
// Megatron's --moe-layer-freq), so pricing the 80 layers of a 70B model one by one for each of
// thousands of configurations would repeat the same arithmetic 80 times; the reduced model
// prices each kind once. tests/planner/search checks the expansion against the full cost model.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/cost_model.h"

namespace pipescope::planner::search_detail {

// A bound or limit that rules nothing out.
inline constexpr double kUnlimited = std::numeric_limits<double>::infinity();

// One unit under the three recompute modes (kRecomputeModes order), bytes scaled to the reserved
// figure exactly as partition_problem() scales them, so that stage sums match the optimizer's.
struct UnitPrice {
  int64_t static_bytes = 0;
  int64_t step_bytes = 0;  // the optimizer step's working memory (PartitionUnit::step_bytes)
  std::array<UnitOptionCost, 3> modes;
  double dp_sync_s = 0;
  double optimizer_s = 0;
};

struct ScreeningCosts {
  UnitPrice embedding;
  UnitPrice head;
  std::vector<UnitPrice> layer_kinds;  // layer i costs layer_kinds[i % layer_kinds.size()]
  int64_t extra_bytes = 0;             // per stage: CUDA context and NCCL buffers
  int64_t capacity_bytes = 0;
  double p2p_s = 0;
  double step_fixed_s = 0;             // per stage, once (CostModel::step_fixed_s)
  bool sync_overlaps_backward = true;  // CostModel::sync_overlaps_backward
  double sync_overlap_slowdown = 0;    // CostModel::sync_overlap_slowdown
  double time_slack = 0;               // PartitionProblem::time_slack: the planner's time limit

  const UnitPrice& layer(int64_t index) const {
    return layer_kinds[static_cast<size_t>(index) % layer_kinds.size()];
  }
};

// Layers after which the pattern of layer kinds repeats: 1 for a dense model.
int64_t layer_period(const models::ModelDesc& model);

// `model` with one period of layers (at most its own count).
models::ModelDesc reduced_model(const models::ModelDesc& model);

// `inputs` holds the reduced model and the configuration to price.
Expected<ScreeningCosts> screening_costs(const PlanInputs& inputs);

}  // namespace pipescope::planner::search_detail
