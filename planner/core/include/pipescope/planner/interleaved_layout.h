// The interleaved schedule's layout: how many decoder layers each of its p x v chunks holds (the
// embedding in the first chunk, the output layer in the last). What a layout costs (each stage's
// peak memory at the schedule's fullest mix of chunks, the simulated pipeline time), and the search
// for the layout with the least peak memory whose time stays within a limit.
//
// The search: every layout when there are few (exact), otherwise a descent from the start layout
// that moves one layer at a time out of the fullest stages while the time holds, with a lower bound
// on the least peak to say how far from optimal it may be. The bound ignores the time limit, lets
// stages hold fractions of layers, and weighs a stage's layers by the least their activations can
// weigh at its fullest instant whatever chunks they are in (a small LP per stage).
#pragma once

#include <cstdint>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/cost_model.h"
#include "pipescope/planner/pipeline_schedule.h"
#include "pipescope/planner/schedule_dag.h"

namespace pipescope::planner {

// Calls visit(chunk, unit) for every unit of every chunk of a layout over `unit_count` units (unit 0
// the embedding, in the first chunk; the last unit the output layer, in the last chunk; the
// decoder layers between, in model order): the one mapping from a layout to what its chunks hold.
template <class Visit>
void for_each_chunk_unit(const std::vector<int64_t>& chunk_layers, int unit_count, Visit&& visit) {
  const int chunks = static_cast<int>(chunk_layers.size());
  int first = 1;
  for (int g = 0; g < chunks; ++g) {
    const int end = first + static_cast<int>(chunk_layers[static_cast<size_t>(g)]);
    if (g == 0) visit(g, 0);
    for (int unit = first; unit < end; ++unit) visit(g, unit);
    if (g == chunks - 1) visit(g, unit_count - 1);
    first = end;
  }
}

class LayoutEvaluator {
 public:
  // `costs` must outlive the evaluator; `option` is the recompute option every chunk runs.
  static Expected<LayoutEvaluator> make(const CostModel& costs, const ScheduleSpec& spec, int option);

  int chunks() const { return spec_.stages * spec_.virtual_chunks; }
  int stages() const { return spec_.stages; }
  int layers() const { return static_cast<int>(costs_->units.size()) - 2; }
  // Reserved peak of each stage (stage_memory()), and the simulated pipeline time.
  std::vector<int64_t> stage_peaks(const std::vector<int64_t>& chunk_layers) const;
  void stage_peaks(const std::vector<int64_t>& chunk_layers,
                   std::vector<int64_t>& peaks) const;  // stages() long
  int64_t stage_peak(const std::vector<int64_t>& chunk_layers, int stage) const;
  Expected<double> pipeline_s(const std::vector<int64_t>& chunk_layers) const;  // the simulator's iteration_s
  // A bound no layout's worst stage peak is below (the header's relaxation).
  int64_t peak_lower_bound() const;
  // Whether every decoder layer has the same memory: moving a layer then changes two stages only.
  bool identical_layers() const { return identical_layers_; }
  // The schedule's graph and in-flight mixes, built once: a plan's reports reuse them.
  const detail::ScheduleDag& dag() const { return dag_; }
  const std::vector<std::vector<ChunkMix>>& mixes() const { return mixes_; }

 private:
  LayoutEvaluator(const CostModel& costs, const ScheduleSpec& spec, int option,
                  std::vector<std::vector<ChunkMix>> mixes, detail::ScheduleDag dag)
      : costs_(&costs), spec_(spec), option_(option), mixes_(std::move(mixes)), dag_(std::move(dag)) {}

  const CostModel* costs_;
  ScheduleSpec spec_;
  int option_;
  std::vector<std::vector<ChunkMix>> mixes_;
  bool identical_layers_ = true;
  // The schedule's graph, built once and timed for each layout; not for concurrent use.
  detail::ScheduleDag dag_;
  mutable std::vector<double> forward_s_, backward_s_, p2p_s_, scratch_;
  mutable std::vector<int64_t> activation_scratch_;
};

// Megatron-LM's uniform chunks when they divide the layers; otherwise the layers spread as evenly
// as they go, the later chunks taking the extra ones.
std::vector<int64_t> balanced_layout(int64_t layers, int chunks);

struct LayoutSearchResult {
  std::vector<int64_t> chunk_layers;
  int64_t peak_memory_bytes = 0;  // the worst stage's reserved peak
  double pipeline_s = 0;
  double time_limit_s = 0;
  bool exhaustive = false;        // every layout was priced: the least peak within the limit
  int64_t lower_bound_bytes = 0;  // no layout's peak is below it (exhaustive: the peak itself)
};

// The layout with the least worst-stage peak whose pipeline time is at most `time_limit_s`,
// starting from `start` (which must meet the limit). `max_exhaustive` bounds the layouts priced
// one by one; above it the descent runs.
Expected<LayoutSearchResult> search_layout(const LayoutEvaluator& evaluator,
                                           const std::vector<int64_t>& start, double time_limit_s,
                                           int64_t max_exhaustive = 20000);

}  // namespace pipescope::planner
