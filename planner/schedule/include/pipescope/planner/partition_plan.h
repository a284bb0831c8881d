// The pipeline partition problem on numbers: a sequence of units (the embedding, decoder layers,
// the LM head with its loss: to this code they are all just units), each with its cost under
// every recompute option, split into p contiguous stages with one recompute option per stage.
// This header holds the problem, a plan, and the evaluation of a given plan; the search lives in
// partition_optimizer.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/pipeline_schedule.h"

namespace pipescope::planner {

// One unit under one recompute option, per micro-batch.
struct UnitOptionCost {
  double forward_s = 0;
  double backward_s = 0;              // including the recomputation this option implies
  std::int64_t activation_bytes = 0;  // kept from the unit's forward until its backward ends
  // Working memory while the unit runs, on top of what is kept (e.g. the activations full
  // recomputation rebuilds for one layer's backward). A stage adds the largest of its units':
  // one unit runs at a time.
  std::int64_t transient_bytes = 0;
};

// A stage's memory at the fuller of its two phases: the micro-batches (activations in flight and
// the running unit's working memory) and the optimizer step after them.
inline std::int64_t stage_memory_bytes(std::int64_t fixed_bytes, std::int64_t pipeline_bytes,
                                       std::int64_t step_bytes) {
  return fixed_bytes + std::max(pipeline_bytes, step_bytes);
}

struct PartitionUnit {
  std::string name;
  std::int64_t static_bytes = 0;        // weights, gradients, optimizer state: option-independent
  std::vector<UnitOptionCost> options;  // indexed by recompute option; the same count for every unit
  // Working memory of the optimizer step, allocated after the last backward has freed the
  // activations (option-independent). A stage adds all of its units': the step works on the
  // stage's parameters at once. Its memory is the larger of the two phases.
  std::int64_t step_bytes = 0;
};

enum class Balance {
  kMemory,  // minimize the peak stage memory while the time stays within the bound (default)
  kTime,    // fastest plan whose every stage fits
};

// Which units the uniform baseline treats as embedding and head (see uniform_boundaries()).
struct UniformLayout {
  bool embedding_first = true;
  bool head_last = true;
};

// Schedule operations the exact search times per second on one core (measured on an x86 core of
// 2023: 2.4-2.6 ns per operation at 8 to 64 stages; benches/cpu/partition_benchmark.cpp).
inline constexpr std::int64_t kSearchWorkPerSecond = 400'000'000;

struct PartitionProblem {
  std::vector<PartitionUnit> units;                 // n, in model order
  ScheduleKind schedule = ScheduleKind::kOneFOneB;  // GPipe or 1F1B (interleaved: not supported)
  int stages = 1;                                   // p <= n
  int micro_batches = 1;                            // m
  std::vector<std::int64_t> stage_extra_bytes;      // per stage (buffers, fixed overheads), or empty
  std::int64_t capacity_bytes = 0;                  // usable memory per GPU, headroom already taken off
  double p2p_forward_s = 0;                         // per boundary, each micro-batch's activation
  double p2p_backward_s = 0;                        // per boundary, each micro-batch's gradient
  bool p2p_blocks = false;                          // the stages wait for their transfers (ScheduleSpec)
  // Options a stage may take: empty means all (--recompute auto); one entry pins every stage to
  // it (an explicit --recompute mode).
  std::vector<int> allowed_options;
  // A stage on partial_option may run it on only its first k units and partial_base on the rest
  // (Megatron-LM's full recomputation of the first k layers of a stage, --recompute-method
  // block): the search chooses k per stage. -1: no such option. Both must be allowed, and on
  // every unit partial_option must be no faster and keep no more activation than partial_base,
  // so that a stage's time grows and its kept activations shrink with k.
  int partial_option = -1;
  int partial_base = 0;
  Balance balance = Balance::kMemory;
  double time_slack = 0.02;  // kMemory: time bound = (1 + slack) * fastest fitting
  // kMemory: the time bound is at least the uniform split's time too (more headroom for a slower
  // step: the rule before 2026-11-27, `--balance headroom`).
  bool bound_at_least_uniform = false;
  UniformLayout uniform_layout;
  // The exact search's budget in schedule operations timed: a search node times the 2 p m
  // operations of the schedule (plus n for its expansion), about 2.5 ns each on one core, so the
  // default is roughly a second (kSearchWorkPerSecond). Counting work rather than nodes or wall
  // time keeps small pipelines from running out after milliseconds, big ones from running for
  // minutes, and every answer reproducible. Past it, the optimizer returns its best plan so far
  // with a proven bound on the optimum (PartitionResult::optimality_gap).
  std::int64_t max_search_work = kSearchWorkPerSecond;
};

// A plan's choices: stage s holds units [boundaries[s], boundaries[s + 1]) under options[s].
struct PlanChoice {
  std::vector<int> boundaries;  // p + 1 entries: 0 = b_0 < b_1 < ... < b_p = n
  std::vector<int> options;     // p entries
  // Empty, or p entries: for a stage on the problem's partial_option, how many of its first
  // units run that option (1 to all of them; the rest run partial_base); 0 on other stages.
  std::vector<int> partial_units;
};

struct StagePlan {
  int first_unit = 0;
  int end_unit = 0;  // one past the last
  int option = 0;
  int partial_units = 0;          // on partial_option: its first units that run it (see PlanChoice)
  double forward_s = 0;           // per micro-batch: the sum over its units
  double backward_s = 0;          // per micro-batch, recompute included
  int activations_in_flight = 0;  // micro-batches whose activations it holds at its peak
  // extra + sum(static) + max(in_flight * sum(activation) + max(transient), sum(step))
  std::int64_t memory_bytes = 0;
  bool overflows = false;  // memory_bytes > capacity_bytes
};

struct PartitionPlan {
  PlanChoice choice;
  std::vector<StagePlan> stages;
  double iteration_s = 0;  // simulate_schedule() on the stage times, p2p included
  double bubble_fraction = 0;
  std::int64_t peak_memory_bytes = 0;
  bool fits = false;  // no stage overflows
};

// Checks a problem; the first message names what is wrong and how to fix it.
Status validate(const PartitionProblem& problem);

// Evaluates a plan exactly: stage sums, memory, and the simulated iteration time.
Expected<PartitionPlan> evaluate_plan(const PartitionProblem& problem, const PlanChoice& choice);

// Megatron-style uniform split of n units into p stages: the decoder layers (every unit but the
// embedding and the head the layout names) divided evenly, the embedding on the first stage and
// the head on the last. When the layers do not divide, the first L mod p stages take one layer
// more, as DeepSpeed's partition_uniform() does (Megatron-LM itself refuses such a split).
// Fails when a stage would get no unit.
Expected<std::vector<int>> uniform_boundaries(int units, int stages, UniformLayout layout);

// The uniform split with, on each stage, the fastest allowed option (least forward + backward)
// that fits, or the one needing least memory when none fits: the baseline plans are compared to.
// With a partial option, the fewest units on it that let a stage fit count as one more option.
Expected<PartitionPlan> uniform_plan(const PartitionProblem& problem);
// The same choice of options on any split: the baseline of a split a user gives.
Expected<PartitionPlan> fastest_fitting_options(const PartitionProblem& problem,
                                                const std::vector<int>& boundaries);

}  // namespace pipescope::planner
