// Screening one configuration without the simulator: the stage sums of its split from the
// screening costs, the recompute option each stage takes, whether every stage fits, and a lower
// bound on the iteration time that the search ranks by until it plans the configuration exactly.
//
// The bound (valid for GPipe, 1F1B and interleaved 1F1B with any op times). Stage s's first op
// is a forward of model chunk s, which waits for that micro-batch's forwards on chunks 0..s-1;
// its last op is the backward of chunk s of some micro-batch, after which that micro-batch's
// backwards on chunks s-1..0 still run; in between the stage is busy with all its ops. So
//     T >= sum_{g<s} (f_g + b_g + d) + m * (the stage's forward + backward),  d = 2 x p2p,
// and the iteration adds the slowest stage's exposed DP sync and optimizer step, which the
// screening costs give exactly.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "pipescope/planner/partition_plan.h"
#include "pipescope/planner/pipeline_schedule.h"
#include "screening_costs.h"

namespace pipescope::planner::search_detail {

// Sums of some units under each recompute option (scaled bytes, as the optimizer sees them).
struct StageSums {
  std::array<double, 3> forward_s{};
  std::array<double, 3> backward_s{};
  int64_t static_bytes = 0;
  int64_t step_bytes = 0;
  std::array<int64_t, 3> activation_bytes{};
  std::array<int64_t, 3> transient_bytes{};
  double dp_sync_s = 0;
  double optimizer_s = 0;

  void add(const UnitPrice& unit, int64_t count);
  double time_s(int option) const { return forward_s[option] + backward_s[option]; }
  // The fuller of the pipeline phase (`held_activation_bytes` in flight) and the optimizer step.
  int64_t held_memory_bytes(int option, int64_t extra_bytes, int64_t held_activation_bytes) const {
    return stage_memory_bytes(extra_bytes + static_bytes, held_activation_bytes + transient_bytes[option],
                              step_bytes);
  }
  int64_t memory_bytes(int option, int64_t extra_bytes, int64_t in_flight) const {
    return held_memory_bytes(option, extra_bytes, in_flight * activation_bytes[option]);
  }
};

// Units [first, end) of the sequence embedding, layers 0..L-1, head (n = L + 2 units).
StageSums sum_units(const ScreeningCosts& costs, int64_t layers, int first, int end);

// The layout of one pipeline: schedule, stage count, micro-batches, in-flight counts, and the
// split frameworks use by default (unit boundaries for GPipe and 1F1B, chunks for interleaved).
struct PipelineShape {
  ScheduleKind kind = ScheduleKind::kOneFOneB;
  int stages = 1;
  int micro_batches = 1;
  int virtual_chunks = 1;
  int64_t layers = 0;
  std::vector<int> in_flight;                // per stage, in units of one (chunk) activation
  std::vector<std::vector<ChunkMix>> mixes;  // interleaved: per stage, in_flight_mixes()
  std::vector<int> uniform_boundaries;       // p + 1 unit indices (GPipe, 1F1B)
  std::vector<int64_t> uniform_chunks;       // interleaved: decoder layers per chunk (balanced_layout())
  bool p2p_blocks = false;                   // ScheduleSpec::p2p_blocks: the search's framework's
};

Expected<PipelineShape> pipeline_shape(ScheduleKind kind, int stages, int micro_batches, int virtual_chunks,
                                       int64_t layers);

// Allowed options as a bit mask over kRecomputeModes (bit r: option r).
int allowed_options(RecomputeChoice choice, ScheduleKind kind);
constexpr int kRecomputeOptions = 3;
inline bool option_allowed(int allowed, int option) { return (allowed >> option & 1) != 0; }

// Layers i in [0, x) with i % period == kind (layer i is of kind i % period).
int64_t layers_of_kind_below(int64_t x, int64_t kind, int64_t period);

struct Screened {
  bool fits = false;
  int64_t peak_bytes = 0;  // of the options chosen
  double bound_s = 0;      // lower bound on the iteration time (meaningful when it fits)
  bool single_option = true;
  int option = 0;  // when single_option: every stage's
};

// One configuration's stage sums on its default split, reused for every recompute choice.
class UniformScreen {
 public:
  void prepare(const ScreeningCosts& costs, const PipelineShape& shape);
  // The options frameworks would take per stage (uniform_plan()'s rule: the fastest that fits,
  // else the smallest), written to `options`, and what follows from them.
  Screened screen(int allowed, std::vector<int>& options) const;

 private:
  const ScreeningCosts* costs_ = nullptr;
  const PipelineShape* shape_ = nullptr;
  std::vector<StageSums> stages_;  // per stage (interleaved: transient is the chunk maximum)
  // Per stage and option, the activation bytes held at the stage's peak: in-flight count times the
  // stage's activations, or the interleaved stage's fullest mix of chunks.
  std::vector<std::array<int64_t, 3>> held_activation_bytes_;
  std::vector<StageSums> chunks_;  // interleaved: per model chunk
};

// Lower bound on the iteration time of `options` on the stages [boundaries] (GPipe, 1F1B).
double split_bound_s(const ScreeningCosts& costs, const PipelineShape& shape,
                     const std::vector<int>& boundaries, const std::vector<int>& options);

// Lower bound for any split of a GPipe or 1F1B pipeline, from the units' cheapest options.
double any_split_bound_s(const ScreeningCosts& costs, const PipelineShape& shape, int allowed);

// The split with the least slowest-stage time (forward + backward) among contiguous splits whose
// every stage fits, each stage on its fastest option that fits (GPipe, 1F1B). False when no split
// fits. Exact as a feasibility test: a stage's least memory only grows as it takes units, so
// filling stages greedily from the first finds a split within a limit whenever one exists.
bool balanced_split(const ScreeningCosts& costs, const PipelineShape& shape, int allowed,
                    std::vector<int>& boundaries, std::vector<int>& options);
bool any_split_fits(const ScreeningCosts& costs, const PipelineShape& shape, int allowed);

}  // namespace pipescope::planner::search_detail
