// What each unit of the model (the embedding, every decoder layer, the LM head with its loss)
// costs on one rank, per micro-batch and per recompute mode: forward and backward time,
// activation bytes, and its static memory (weights, gradients, optimizer state under ZeRO); plus
// the per-iteration costs outside the pipeline (data-parallel gradient sync, optimizer step).
// Every efficiency comes from the calibration profile, every size from the cluster and model.
//
// Precision recipes (ParallelConfig::optimizer).
// Megatron-LM's mixed-precision Adam (Micikevicius et al. 2018): bf16 weights (2 bytes per
// parameter), fp32 gradients accumulated and reduced in fp32 (4), fp32 master weights and Adam's
// two moments (12). ZeRO (Rajbhandari et al. 2020) stage 1 shards the 12, stage 2 also the
// gradients, stage 3 also the weights, over the shard group (all of DP, or the --zero-shard
// subgroup of hierarchical ZeRO).
// DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py; the same allocations in
// microsoft/DeepSpeed 15293139f of 2022-02-28, 56c522386 of 2022-04-19 and 38327e07f of
// 2025-02-21): the flat bf16 weights (2), an fp32 gradient buffer zeros_like(the flat bf16
// weights) that is not sharded (4), the fp32 master partition bf16_dp_partitions[rank].float()
// (4 / dp) and Adam's moments on it (8 / dp); the pipeline engine clears autograd's bf16
// gradients only before the next backward (pipe/engine.py, _exec_backward_pass), so they (2)
// live through the step: 8 + 12 / dp bytes per parameter. After every backward update_hp_grads
// adds each bf16 gradient into the fp32 buffer as lp.grad.to(float32), one parameter at a time:
// working memory of the largest tensor's fp32 copy.
// InternEvo's HybridZeroOptimizer (internlm/solver/optimizer/hybrid_zero_optim.py, the same in
// InternLM/InternLM 20fe5ac and 01e7fd61 of 2023 and InternLM/InternEvo c628a8c8 of 2024): flat bf16 weights
// (2) and autograd's bf16 gradients, accumulated over the micro-batches in place (2); the rank's
// shard of its zero1 group gets an fp32 master copy, fp16_flat.float() (4 / g), and Adam's
// moments (8 / g): 4 + 12 / g bytes per parameter. The last backward all-reduces the bf16
// gradients over all of data parallelism (reduce_tensor, ParallelMode.DATA); step() then updates
// the shard and broadcasts each shard from its owner to the zero1 group, one broadcast per rank.
//
// The optimizer step's working memory (UnitCost::step_bytes), allocated after the last backward,
// when the activations are freed. BF16_Optimizer under the pipeline engine (_bf16_reduce_grads ->
// buffered_allreduce_fallback -> allreduce_bucket, 15293139f and 56c522386 of 2022) all-reduces
// the flat fp32 gradients in the engine's communication type, bf16 unless configured:
// tensor.to(bfloat16), 2 bytes per parameter of the stage, the all-reduce runs on that copy, which
// is then copied back. (The first bucket closes once it holds more than 500 M elements; a stage
// with fewer parameters than that gets both parameter groups concatenated first, 4 bytes per
// parameter more, which the planner does not price.) InternEvo's step flattens the shard's bf16
// gradients (2 / g) and casts them to fp32 (4 / g). Megatron-LM's optimizer steps on its fp32
// gradient buffer in place: none.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/models/model_desc.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/parallel_config.h"
#include "pipescope/planner/partition_plan.h"

namespace pipescope::planner {

// Recompute modes in PartitionUnit::options order.
inline constexpr std::array<models::RecomputeMode, 3> kRecomputeModes = {
    models::RecomputeMode::kNone, models::RecomputeMode::kSelective, models::RecomputeMode::kFull};

// The name of option `option` (an index into kRecomputeModes): none, selective, full.
inline const char* recompute_option_name(int option) {
  return option == 0 ? "none" : option == 1 ? "selective" : "full";
}
inline constexpr int kFullRecomputeOption = 2;  // kRecomputeModes' index of kFull

// Work budget of the exact partition search behind `pipescope plan` (PartitionProblem::
// max_search_work): about a second on one core; `--search-time` changes it.
inline constexpr int64_t kPlanSearchWork = kSearchWorkPerSecond;

// What a unit's time is spent on, as the calibration profile prices it: GEMMs, the attention
// core, memory-bound kernels (norms, activations, residuals, rotary, the loss, gradient
// accumulation) and the collectives on the critical path (TP, CP, EP; ZeRO-3's exposed gathers).
// The profiler's report groups a trace's kernels the same way, so the two can be compared. The
// launch gaps are the GPU's idle time between kernels, per kernel launched (the profile's
// losses.launch_gap_s), where the planner knows a framework's kernels (--framework pytorch-eager).
enum class WorkKind { kGemm, kAttention, kMemoryBound, kCommunication, kLaunchGap };
inline constexpr size_t kWorkKinds = 5;
// "gemm", "attention", "memory_bound", "communication", "launch_gap"
const char* work_kind_name(WorkKind kind);

struct WorkTimes {
  std::array<double, kWorkKinds> s{};  // seconds, by WorkKind
  double& operator[](WorkKind kind) { return s[static_cast<size_t>(kind)]; }
  double operator[](WorkKind kind) const { return s[static_cast<size_t>(kind)]; }
  double total_s() const {
    double total = 0;
    for (double part : s) total += part;
    return total;
  }
  WorkTimes& operator+=(const WorkTimes& o) {
    for (size_t k = 0; k < kWorkKinds; ++k) s[k] += o.s[k];
    return *this;
  }
};

// One micro-batch through a unit or a stage: the forward, and the backward with the
// recomputation its recompute option implies.
struct PassWork {
  WorkTimes forward, backward;
  PassWork& operator+=(const PassWork& o) {
    forward += o.forward;
    backward += o.backward;
    return *this;
  }
};

struct UnitCost {
  std::string name;                       // "embedding", "layer 0", ..., "lm head"
  bool is_layer = false;                  // a decoder layer (counted in a stage's "layers")
  int64_t parameters = 0;                 // on this rank (TP/EP share)
  int64_t static_bytes = 0;               // allocated: weights + gradients + optimizer state, after ZeRO
  std::array<UnitOptionCost, 3> by_mode;  // allocated bytes, seconds; kRecomputeModes order
  std::array<PassWork, 3> work_by_mode;   // by_mode's seconds by kind of work (totals equal)
  double dp_sync_s = 0;                   // gradient sync (and ZeRO parameter gather) per iteration
  double optimizer_s = 0;                 // the Adam step on this rank's share
  int64_t step_bytes = 0;                 // allocated: the optimizer step's working memory
};

struct CostModel {
  std::vector<UnitCost> units;
  double p2p_s = 0;                // one micro-batch's activation (or gradient) across a stage boundary
  bool p2p_blocks = false;         // the stages wait for their transfers (pipeline_p2p_blocks())
  int64_t fixed_bytes = 0;         // CUDA context + NCCL buffers: outside the caching allocator
  int64_t cuda_context_bytes = 0;  // fixed_bytes' parts, for those who compare with a trace,
  int64_t nccl_buffer_bytes = 0;   // which sees NCCL's buffers but never the context
  double reserve_fraction = 0;     // reserved = allocated x (1 + this): what the allocator holds
  int64_t capacity_bytes = 0;      // GPU memory less the profile's headroom
  int64_t device_bytes = 0;        // GPU memory
  std::vector<std::string> notes;  // modelling choices the user should know about
  // Once per stage, in its optimizer step: what does not scale with the stage's parameters
  // (InternEvo's serial shard broadcasts: one latency per rank of the zero1 group).
  double step_fixed_s = 0;
  // Whether the gradient sync runs during the last micro-batch's backward (Megatron-LM's
  // --overlap-grad-reduce, InternEvo's overlap_sync_grad) or after it (DeepSpeed's ReduceGrads).
  bool sync_overlaps_backward = true;
  // How much slower a decoder layer's backward runs while the sync runs beside it
  // (overlap_slowdown() of its work; 0 when the profile measured no interference).
  double sync_overlap_slowdown = 0;
};

// The time that `comm_s` of communication overlapped with `compute_s` of compute adds to the
// compute alone, when the compute runs (1 + slowdown) times slower beside it: either the compute
// ends within the communication (the rest of the communication shows), or the communication
// ends first and only the slowed part shows.
inline double exposed_beside_s(double comm_s, double compute_s, double slowdown) {
  if (comm_s >= compute_s * (1 + slowdown)) return comm_s - compute_s;
  return comm_s * slowdown / (1 + slowdown);
}

// How much slower `work` runs beside a communication kernel: the profile's GEMM slowdown for its
// GEMMs and attention (tensor-core work that loses the SMs the kernel holds), its memory-bound
// one for the rest, weighted by time.
double overlap_slowdown(const WorkTimes& work, const TrainingLosses& losses);

// What of a stage's gradient sync the iteration waits for: the part its last backward cannot
// hide (and what the sync costs that backward beside it), or all of it when the sync follows the
// backward.
inline double exposed_sync_s(double sync_s, double last_backward_s, bool overlaps_backward,
                             double overlap_slowdown = 0) {
  if (!overlaps_backward) return sync_s;
  return exposed_beside_s(sync_s, last_backward_s, overlap_slowdown);
}

// A stage's memory figures from its tensors' bytes (unscaled): `pipeline_bytes` are its
// activations in flight and the running unit's working memory, `step_bytes` the optimizer step's.
struct StageMemory {
  int64_t allocated_bytes = 0;    // the fuller phase's tensors
  int64_t peak_memory_bytes = 0;  // reserved at the fuller phase: what runs out
  // What the caching allocator holds once the first step has run, CUDA context and NCCL included:
  // what nvidia-smi shows. The step's buffers come after the activations are freed, but larger
  // than any block the activations left in the cache, so the allocator takes new segments for
  // them and keeps the old ones, unless the GPU is full and it has to give its cache back.
  int64_t reserved_bytes = 0;
};
StageMemory stage_memory(const CostModel& costs, int64_t static_bytes, int64_t pipeline_bytes,
                         int64_t step_bytes);

// A stage's sums over its units, each under the recompute option it runs: what make_plan()
// reports for a stage and what search ranks it by, from one place.
struct StageUnitTotals {
  int layers = 0;  // decoder layers
  bool has_embedding = false, has_head = false;
  int full_recompute_layers = 0;  // decoder layers run under full recomputation
  int64_t parameters = 0, static_bytes = 0, step_bytes = 0;
  int64_t activation_bytes = 0;  // allocated, one micro-batch's
  int64_t transient_bytes = 0;   // allocated, the largest unit's working memory
  PassWork work;
  double dp_sync_s = 0;
  double optimizer_s = 0;  // the units' Adam steps, without the step's fixed part

  void add_unit(const CostModel& costs, int unit, int option);
  // Another chunk of the same stage: sums, and the larger working memory.
  StageUnitTotals& operator+=(const StageUnitTotals& chunk);
};

// A contiguous stage's totals. Its units run its option, except that a stage on full
// recomputation with a partial count recomputes only its first units (Megatron-LM's
// --recompute-method block --recompute-num-layers) and keeps everything of the others.
StageUnitTotals stage_unit_totals(const CostModel& costs, const StagePlan& stage);

struct PlanInputs {
  models::ModelDesc model;
  Cluster cluster;
  CalibrationProfile profile;
  ParallelConfig config;                  // resolved (resolve_config)
  int64_t search_work = kPlanSearchWork;  // the partition search's budget
};

Expected<CostModel> build_cost_model(const PlanInputs& inputs);

// The optimizer's problem for this model: unit costs scaled to the `reserved` figure (what runs
// out), the fixed bytes as a per-stage extra, and the recompute options the config allows.
PartitionProblem partition_problem(const PlanInputs& inputs, const CostModel& costs);

}  // namespace pipescope::planner
