// Plans one configuration exactly, as `pipescope plan` would: the full cost model, the schedule
// simulator on the given split, and the figures make_plan() reports for its baseline. Full cost
// models are cached per configuration key, since configurations that differ only in schedule or
// recompute share one.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "pipescope/models/flop_count.h"
#include "pipescope/planner/cost_model.h"
#include "pipescope/planner/search.h"

namespace pipescope::planner::search_detail {

class ExactPlanner {
 public:
  ExactPlanner(const SearchRequest& request, int64_t seq_length);

  // GPipe and 1F1B: `config` on units [boundaries] with per-stage recompute `options`
  // (kRecomputeModes indices). Interleaved: Megatron's uniform chunks (make_plan()); the split
  // arguments are ignored.
  Expected<RankedPlan> plan(const ParallelConfig& config, const std::vector<int>& boundaries,
                            const std::vector<int>& options, bool uniform_split);

  int64_t cost_models_built() const { return built_; }

 private:
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, int64_t>;
  Expected<const CostModel*> costs_for(const ParallelConfig& config);
  void set_throughput(RankedPlan& plan) const;

  PlanInputs inputs_;
  std::map<Key, CostModel> cache_;
  models::IterationFlops flops_;  // per iteration, all GPUs
  int64_t built_ = 0;
};

}  // namespace pipescope::planner::search_detail
