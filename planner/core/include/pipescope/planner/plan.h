// A plan: for one configuration, every pipeline stage's layers, memory and time, for the
// uniform split frameworks use by default and for the split the partition optimizer suggests.
// Memory is given as both figures of docs/design.md: `allocated` (what tensors use) and `reserved`
// (what the caching allocator holds, plus the CUDA context and NCCL buffers: what runs out), the
// latter twice when the optimizer step needs working memory: at the fuller phase (what runs
// out) and as held after the first step (what nvidia-smi shows; see StageMemory).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/models/flop_count.h"
#include "pipescope/planner/cost_model.h"

namespace pipescope::planner {

struct StageReport {
  int index = 0;
  int first_unit = 0, end_unit = 0;  // units [first, end) of CostModel::units
  int layers = 0;                    // decoder layers
  std::vector<int> chunk_layers;     // the interleaved schedule: decoder layers of each of its chunks
  bool has_embedding = false, has_head = false;
  int64_t parameters = 0;  // on one rank of the stage
  int in_flight = 0;       // micro-batches whose activations the stage holds at its peak
  std::string recompute;   // none, selective, full
  // With recompute "full": how many of the stage's decoder layers are recomputed (its first
  // ones, Megatron's --recompute-method block); the others keep all their activations.
  int full_recompute_layers = 0;
  int64_t static_bytes = 0;              // allocated: weights, gradients, optimizer state
  int64_t activation_bytes = 0;          // allocated: all in-flight micro-batches together, at the peak
  int64_t transient_bytes = 0;           // allocated: working memory of the largest unit (recompute)
  int64_t step_bytes = 0;                // allocated: the optimizer step's, after the activations are freed
  int64_t allocated_bytes = 0;           // static + the larger of activation + transient and step
  int64_t peak_memory_bytes = 0;         // reserved: allocated x (1 + allocator reserve) + fixed overheads
  int64_t reserved_bytes = 0;            // held once the first step ran (StageMemory): what nvidia-smi shows
  double forward_s = 0, backward_s = 0;  // per micro-batch
  PassWork work;                         // forward_s and backward_s by kind of work
  double idle_s = 0;                     // inside the pipeline part of the iteration
  double dp_sync_exposed_s = 0;          // gradient sync not hidden behind the last backward
  double optimizer_s = 0;
  bool overflows = false;
};

struct PlanReport {
  std::vector<StageReport> stages;
  double pipeline_s = 0;   // the simulated schedule
  double iteration_s = 0;  // pipeline + the slowest stage's exposed gradient sync and optimizer step
  double bubble_fraction = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;           // model FLOPs (no recompute) / iteration / GPU, in TFLOP/s
  double hardware_tflops_per_gpu = 0;  // with recomputation, as Narayanan et al. 2021 count
  double mfu = 0;                      // model FLOPs / (iteration x GPUs x peak dense bf16)
  double mfu_causal = 0;               // the same with causal attention halved (models::IterationFlops)
  int64_t peak_memory_bytes = 0;       // reserved, of the worst stage
  int64_t reserved_bytes = 0;          // held once the first step ran, of the worst stage
  bool fits = false;
};

// What an iteration of `iteration_s` yields: tokens per second, and the model's FLOPs (and
// with recomputation, `hardware`) per second and GPU, also as a share of the GPU's dense bf16
// peak. All 0 when iteration_s is not positive.
struct Throughput {
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  double mfu_causal = 0;
};
Throughput throughput_of(const models::IterationFlops& flops, const ParallelConfig& config, const Gpu& gpu,
                         double iteration_s);

// One stage's work over a whole step, by kind: its micro-batches' forwards and backwards, its
// optimizer step and its exposed gradient sync; what the profiler's report shows per step.
struct StageStepWork {
  int stage = 0;
  WorkTimes pipeline;  // micro-batches x (forward + backward), recomputation included
  double optimizer_s = 0;
  double dp_sync_exposed_s = 0;
  double total_s() const { return pipeline.total_s() + optimizer_s + dp_sync_exposed_s; }
};
// The stage with the most work per step (the first of equals); a plan has at least one stage.
StageStepWork busiest_stage_work(const PlanReport& report, int64_t micro_batches);

// Decoder layers per chunk in model order: one chunk per stage, or, for the interleaved schedule,
// `chunks_per_stage` each (chunk g on stage g mod p). A report without per-chunk counts holds
// Megatron-LM's uniform chunks: its stages' layers spread evenly over their chunks.
std::vector<int64_t> model_order_chunks(const PlanReport& plan, int chunks_per_stage = 1);

// A change to the configuration that could make a plan fit, planned for real. The command line
// names it by the flags that differ from the configuration planned.
struct FitSuggestion {
  ParallelConfig config;  // the configuration planned, changed
  bool fits = false;      // whether the planner's own plan for that change fits
  int64_t peak_memory_bytes = 0;
  double iteration_s = 0;
};

// How the interleaved schedule's suggested layout was found (interleaved_layout.h).
struct LayoutSearch {
  double time_limit_s = 0;        // the suggested layout's pipeline time is at most this
  bool exhaustive = false;        // every layout was priced: the least peak within the limit
  int64_t lower_bound_bytes = 0;  // no layout's peak is below it
};

struct PlanOutcome {
  ParallelConfig config;
  int64_t capacity_bytes = 0;  // GPU memory less headroom
  // What every stage's peak holds besides the caching allocator's reserve (CostModel).
  int64_t cuda_context_bytes = 0;
  int64_t nccl_buffer_bytes = 0;
  double allocator_reserve_fraction = 0;
  PlanReport uniform;  // the baseline: the framework's uniform split, or the user's --split
  bool baseline_is_given_split = false;
  PlanReport suggested;
  // Whether the exact search proved the suggested split optimal; when its budget ran out, the
  // proven gap to the optimum of the objective (peak memory under --balance memory, iteration
  // time under --balance time): (suggested's value - proven lower bound) / lower bound.
  bool suggested_is_optimal = true;
  double optimality_gap = 0;
  // --balance memory: the limit on the suggested split's pipeline time (PartitionResult::
  // time_bound_s), whether it is the objective's own limit (false: it is stated against the fastest
  // fitting split found, which the search could not prove fastest), and that split's time with its
  // proven lower bound. 0 under --balance time, with the interleaved schedule, or when nothing fits.
  double time_limit_s = 0;
  double time_slack = 0;  // the limit's allowance over the fastest fitting split (0.02: 2 %)
  bool time_limit_proven = true;
  double fastest_fitting_s = 0;
  double fastest_fitting_lower_s = 0;
  std::vector<std::string> notes;  // the cost model's modelling choices (CostModel::notes)
  // The interleaved schedule under --recompute auto: the one mode every stage takes.
  std::optional<RecomputeChoice> interleaved_recompute;
  // The uniform split would leave a stage without decoder layers: the baseline is the suggested split.
  bool uniform_split_has_empty_stage = false;
  std::optional<LayoutSearch> layout_search;  // the interleaved schedule's
  std::vector<FitSuggestion> suggestions;     // when the suggested plan does not fit
};

Expected<PlanOutcome> make_plan(const PlanInputs& inputs);

// One recompute setting on every stage, as the frameworks take it.
struct UniformRecompute {
  RecomputeChoice mode = RecomputeChoice::kNone;  // none, selective or full
  int block_layers = 0;  // full: each stage's first this many decoder layers (0: all of them)
};

// Prices the stages of `split` (a report make_plan gave for `inputs`) run with one setting on
// every stage, as the planner prices its own splits: what a framework's settings do when they
// cannot express a plan's per-stage recomputation. The cost model is built once, here.
using RecomputePricer = std::function<Expected<PlanReport>(const UniformRecompute&)>;
Expected<RecomputePricer> uniform_recompute_pricer(const PlanInputs& inputs, const PlanReport& split);

}  // namespace pipescope::planner
