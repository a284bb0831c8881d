// What plan evaluation and the partition search share, so that both compute a stage's sums in
// the same order and therefore bit-identical times: the optimizer's answer and a brute force
// over evaluate_plan() can be compared with ==.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/partition_plan.h"
#include "schedule_dag.h"

namespace pipescope::planner::detail {

// One stage's units under one option, added left to right.
struct StageSums {
  double forward_s = 0;
  double backward_s = 0;
  std::int64_t static_bytes = 0;
  std::int64_t activation_bytes = 0;
  std::int64_t transient_bytes = 0;  // the largest unit's

  void add(const PartitionUnit& unit, int option) {
    const UnitOptionCost& c = unit.options[option];
    forward_s += c.forward_s;
    backward_s += c.backward_s;
    static_bytes += unit.static_bytes;
    activation_bytes += c.activation_bytes;
    transient_bytes = std::max(transient_bytes, c.transient_bytes);
  }
  std::int64_t memory_bytes(std::int64_t extra_bytes, int in_flight) const {
    return extra_bytes + static_bytes + in_flight * activation_bytes + transient_bytes;
  }
};

// The problem's fixed context: options a stage may take, per-stage in-flight counts and extra
// bytes, the p2p vectors and the schedule graph every plan is timed with.
struct PartitionContext {
  std::vector<int> options;  // allowed, ascending
  std::vector<int> in_flight;
  std::vector<std::int64_t> extra_bytes;
  std::vector<double> p2p_forward_s;
  std::vector<double> p2p_backward_s;
  ScheduleDag dag;

  static Expected<PartitionContext> build(const PartitionProblem& problem);

  // Iteration time of per-stage forward and backward times (sizes p).
  double iteration_s(const std::vector<double>& forward_s, const std::vector<double>& backward_s,
                     std::vector<double>& scratch) const {
    return dag.iteration_time(forward_s, backward_s, p2p_forward_s, p2p_backward_s, scratch);
  }
};

}  // namespace pipescope::planner::detail
