// The dependency graph of a pipeline schedule, built once per (kind, p, m, v) and reused for any
// op times. Ops are stored in a topological order, so the timing of a whole iteration is one
// forward pass over an array: end = max(stage free, input ready + p2p) + duration. The partition
// search evaluates thousands of plans with one graph; the public simulator wraps it. A graph
// keeps its cost tables between passes: one graph is not for concurrent use.
#pragma once

#include <span>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/pipeline_schedule.h"

namespace pipescope::planner::detail {

struct DagOp {
  int stage = 0;
  int position = 0;     // index in the stage's order
  int model_chunk = 0;  // g = chunk * p + stage
  ScheduledOp op;
  int prev_on_stage = -1;  // index (in topological order) of the stage's previous op
  int input = -1;          // index of the op whose output this one waits for, or -1
  int p2p_boundary = -1;   // boundary crossed by that input (g-1|g for F, g|g+1 for B), or -1
};

class ScheduleDag {
 public:
  // Fails on an invalid spec. A schedule whose order could deadlock is a programming error in
  // schedule_op_order(), reported as an error rather than a hang.
  static Expected<ScheduleDag> build(const ScheduleSpec& spec);

  const ScheduleSpec& spec() const { return spec_; }
  int model_chunks() const { return spec_.stages * spec_.virtual_chunks; }
  const std::vector<DagOp>& ops() const { return ops_; }  // topological order
  const std::vector<std::vector<ScheduledOp>>& order() const { return order_; }

  // Fills end_s (and start_s when given; both resized to ops().size()) with each op's times and
  // returns the iteration time. Costs are per model chunk, p2p per boundary (an empty span means
  // zero). Sizes and values are the caller's to check.
  double run(std::span<const double> forward_s, std::span<const double> backward_s,
             std::span<const double> p2p_forward_s, std::span<const double> p2p_backward_s,
             std::vector<double>& end_s, std::vector<double>* start_s = nullptr) const;

  // The iteration time alone, without per-op output.
  double iteration_time(std::span<const double> forward_s, std::span<const double> backward_s,
                        std::span<const double> p2p_forward_s, std::span<const double> p2p_backward_s,
                        std::vector<double>& scratch) const;

  struct PathLengths {
    double total_s = 0;    // the iteration time: the longest path
    double through_s = 0;  // the longest path among those that run an op of the given stage
  };
  // The ops of one longest path, counted per model chunk and kind, with the p2p hops it makes each
  // way. The graph is the same for any op times, so the path exists in every plan, and its counts
  // weigh any plan's times into a lower bound on that plan's iteration time.
  struct PathCounts {
    std::vector<int> forward_ops, backward_ops;  // per model chunk
    int forward_hops = 0, backward_hops = 0;
  };
  void critical_path(std::span<const double> forward_s, std::span<const double> backward_s,
                     std::span<const double> p2p_forward_s, std::span<const double> p2p_backward_s,
                     std::vector<double>& scratch, PathCounts& out) const;

  // Both in one pass over the ops; scratch is reused.
  PathLengths longest_paths(int stage, std::span<const double> forward_s, std::span<const double> backward_s,
                            std::span<const double> p2p_forward_s, std::span<const double> p2p_backward_s,
                            std::vector<double>& scratch) const;

 private:
  // Fills the compact cost and delay tables the passes index into.
  void load(std::span<const double> forward_s, std::span<const double> backward_s,
            std::span<const double> p2p_forward_s, std::span<const double> p2p_backward_s) const;
  double forward_pass(double* end) const;

  ScheduleSpec spec_;
  std::vector<std::vector<ScheduledOp>> order_;
  std::vector<DagOp> ops_;
  // The timing passes in structure-of-arrays form, ops shifted by one so that index 0 is an
  // always-zero "nothing": prev_/input_ index ops, cost_ a duration, delay_ a p2p time.
  std::vector<int> prev_, input_, cost_, delay_;
  std::vector<std::vector<int>> stage_ops_;  // per stage, shifted op indices
  std::vector<int> on_stage_;                // per op (unshifted): its stage
  mutable std::vector<double> costs_, delays_;
};

}  // namespace pipescope::planner::detail

namespace pipescope::planner {

// simulate_schedule() on a graph already built for the spec (its callers that time many plans of
// one schedule keep it).
Expected<ScheduleResult> simulate_schedule(const detail::ScheduleDag& dag, const PipelineCosts& costs);

}  // namespace pipescope::planner
