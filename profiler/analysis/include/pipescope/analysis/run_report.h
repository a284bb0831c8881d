// What `pipescope report` found in one run: the plain data every output (terminal tables, JSON,
// HTML) is drawn from. Built by build_run_report() (report_builder.h); renderers only format it.
// Times are ns, sizes bytes; rank times are on the run's aligned clock, 0 = the run's first event.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipescope::analysis {

inline constexpr int kRunReportSchemaVersion = 2;

// One trace file that took part.
struct RankFile {
  int32_t rank = 0;
  std::string path;
  std::string host;
  uint32_t pid = 0;
  uint64_t valid_bytes = 0;
  uint64_t total_bytes = 0;
  uint64_t records = 0;
  uint64_t records_dropped = 0;  // what the profiler said it lost (drop notices, end chunk)
  bool closed_cleanly = false;   // the writer's end chunk is there
  std::string stop;              // "end of data", "truncated", "corrupt"
  std::string stop_detail;
};

struct ClockReport {
  // "nccl kernels" (collective kernel ends), "nccl calls" (host return of blocking calls, when no
  // kernel was captured), or "anchors" (header anchors only: no collective joins two ranks).
  std::string source;
  int32_t reference_rank = 0;
  uint64_t instances_used = 0;
  // Skew left after alignment, over the instances used; empty when none was (source "anchors").
  std::optional<double> residual_median_ns;
  std::optional<double> residual_p99_ns;
  std::optional<double> residual_max_ns;
  std::vector<int32_t> unaligned_ranks;  // kept on their anchors: no collective reached them
};

struct CommunicatorReport {
  uint64_t comm_id = 0;
  std::string role;               // comm_role_name()
  std::vector<int32_t> members;   // global ranks in NCCL-rank order; -1: no trace tells which
  std::vector<int32_t> untraced;  // members that left no trace (worked out from the others' records)
};

struct LayoutReport {
  std::string source;  // "inferred", "stated" (--layout), "none" (no communicator)
  int32_t world_size = 0;
  int32_t tp = 1, pp = 1, dp = 1, zero_shard = 1, ep = 1;
  std::vector<CommunicatorReport> communicators;
  std::vector<std::string> notes;
};

// Where one rank's GPU time went, over its span (first to last GPU activity). Communication
// kernels overlapped by compute are hidden; the rest is exposed. Idle is time with nothing on the
// GPU: the host did not feed it. Waiting on other ranks shows inside communication kernels.
struct GpuBreakdown {
  bool captured = false;  // the trace holds GPU activity (kernels, copies)
  // The figures run from the first NVTX step range's start to the last GPU activity, leaving out
  // what ran before training; false: from the first GPU activity (no step ranges, or GPU work
  // read before the first step's start, rank_digest.h).
  bool from_first_step = false;
  int64_t span_ns = 0;
  int64_t compute_ns = 0;       // union of compute kernels
  int64_t comm_exposed_ns = 0;  // communication kernels not overlapped by compute
  int64_t comm_hidden_ns = 0;   // communication kernels overlapped by compute
  int64_t copy_only_ns = 0;     // copies and memsets with no kernel beside them
  int64_t idle_ns = 0;          // nothing on the GPU: waiting on the host
  // In NCCL kernels waiting for other ranks: collective_wait + p2p_wait; empty when neither is
  // measured (no NCCL kernels, or no collective every member reached and no p2p pair traced).
  std::optional<int64_t> comm_wait_ns;
  double gpu_busy_fraction = 0;         // union of all GPU activity / span (not SM activity)
  uint64_t out_of_order_intervals = 0;  // arrived later than the reorder window; approximate
  // PIPESCOPE_KERNEL_SAMPLE: GPU activity was recorded in 1 step of `kernel_sample_steps` (0: in
  // every step); the span above is then only the recorded part, `recorded_fraction` of it all.
  uint32_t kernel_sample_steps = 0;
  double recorded_fraction = 1.0;
  // A trace not closed (the process died, or the file was cut): the host time after its last GPU
  // record, whose GPU records never reached the file (they arrive up to the scan's reorder
  // window late); the span above ends before it. 0 for a closed trace.
  int64_t unflushed_tail_ns = 0;
  // False when such a trace's GPU records cover no whole step from the first step on: its shares
  // would describe a fragment (often warm-up), so they are not measured ("-", null).
  bool shares_measured = true;
};

// Holistic Trace Analysis' figures for one rank, computed as HTA computes them (docs/report.md,
// "HTA's figures"): over HTA's span, the first GPU activity's start to the last one's end, with
// kernels, copies and memsets all counted, and nothing left out before the first step.
struct HtaFigures {
  int64_t kernel_time_ns = 0;       // the span
  int64_t idle_time_ns = 0;         // the span less the union of all GPU activity
  int64_t compute_time_ns = 0;      // union of computation kernels
  int64_t non_compute_time_ns = 0;  // the rest of the union: communication, copies, memsets
  // The share of communication-kernel time that computation kernels overlap; empty without
  // communication kernels.
  std::optional<double> comp_comm_overlap;
  // The GPU was still running work when the last step began. HTA leaves out what was launched
  // from that instant on, these figures what started from it on: work launched before it and run
  // after it counts in HTA's, not here, so the two may differ (docs/report.md).
  bool busy_at_last_step_start = false;
  // GPU time by the kinds of work running, each instant counted once (HTA's kernel-type
  // breakdown): one kind alone, two overlapping, all three.
  struct KernelTypes {
    int64_t computation_ns = 0, communication_ns = 0, memory_ns = 0;
    int64_t computation_communication_ns = 0, computation_memory_ns = 0, communication_memory_ns = 0;
    int64_t all_three_ns = 0;
  } kernel_types;
};

// One row of HTA's kernel-type breakdown ("COMPUTATION", "COMMUNICATION overlapping MEMORY",
// ...: HTA's names).
struct HtaKernelTypeShare {
  std::string kernel_type;
  int64_t sum_ns = 0;
  double percentage = 0;  // of the rows' sum
};
// The rows of `types`, largest first; kinds that never ran left out.
std::vector<HtaKernelTypeShare> hta_kernel_type_shares(const HtaFigures::KernelTypes& types);

struct RankReport {
  int32_t rank = 0;
  int32_t stage = 0, tp_rank = 0, dp_rank = 0, shard_rank = 0;
  std::string host;
  GpuBreakdown gpu;
  std::optional<HtaFigures> hta;  // empty without GPU activity
  // Memory: the figure the trace holds ("reserved": cudaMalloc'ed by the allocator, "allocated":
  // stream-ordered pool allocations, "none": no memory records).
  std::string memory_figure = "none";
  std::optional<uint64_t> peak_memory_bytes;  // empty: no memory records
  int64_t peak_memory_at_ns = 0;
  // Held before the first forward (NVTX, else the p2p pattern's first forward); empty when
  // nothing shows where the first forward starts.
  std::optional<uint64_t> static_memory_bytes;
  std::optional<uint64_t> peak_activation_bytes;  // peak - static
  // Pipeline: from NVTX forward/backward ranges ("nvtx"), else from the p2p pattern and the
  // compute between transfers ("p2p"); figures nothing measured are empty ("none").
  std::string pipeline_source = "none";
  uint64_t forward_ranges = 0, backward_ranges = 0;  // NVTX ranges seen
  std::optional<int64_t> forward_mean_ns, backward_mean_ns;
  // 1 - (forward + backward) / (first forward .. last backward), per step, mean.
  std::optional<double> bubble_fraction;
  // Time in p2p operations (kernels, or blocking host calls); empty when the trace holds no NCCL
  // call, so that transfers made another way (gloo, host copies) are not read as none.
  std::optional<int64_t> p2p_ns;
  // Waiting for other members in collectives (see GpuBreakdown); empty when the rank took part
  // in no collective instance that every member's trace reached (nothing to measure it on).
  std::optional<int64_t> collective_wait_ns;
  int64_t p2p_wait_ns = 0;  // in p2p receives, waiting for the sender to start (0 without p2p_ns)
  // Steps seen by this rank.
  uint64_t steps = 0;
  int64_t step_mean_ns = 0;
  // GPU time by the report's kernel category (kernel_category.h; "copy": memcpy and memset).
  std::map<std::string, int64_t> kernel_ns_by_category;
  // The GPUs its kernels ran on, by UUID ("GPU-xxxxxxxx-..."); empty when the trace names none.
  std::vector<std::string> gpu_uuids;
  // Trace extent on the aligned clock.
  int64_t first_event_ns = 0;
  int64_t last_event_ns = 0;
};

// Figures of a stage, means over its ranks; empty where not measured (no NVTX range and no
// p2p pattern shows them; the last stage's forward / backward split and phases under "p2p").
struct StageReport {
  int32_t stage = 0;
  int32_t ranks = 0;
  std::string source = "none";              // "nvtx", "p2p" or "none", as RankReport
  std::optional<int64_t> forward_mean_ns;   // per micro-batch
  std::optional<int64_t> backward_mean_ns;  // per micro-batch
  std::optional<int64_t> microbatch_ns;     // forward + backward of one micro-batch
  // The GPU's own time a micro-batch: its ranks' kernels (NCCL's left out) and copies over their
  // forward ranges; what the NVTX times above are not when the host runs ahead of the GPU.
  std::optional<int64_t> gpu_ns_per_microbatch;
  std::optional<int64_t> warmup_ns, steady_ns, cooldown_ns;  // per step, mean
  std::optional<double> bubble_fraction;
  // Its ranks ran kernels on a GPU that another stage's ranks used too (stages time-sliced on one
  // GPU): then a stage that waits looks busy, and the bubble is not measured.
  bool shares_gpu = false;
  std::optional<double> microbatches_per_step;     // forwards a step (NVTX ranges, or activations passed on)
  std::optional<int64_t> p2p_ns;                   // per step, mean over the stage's ranks that measured it
  std::optional<int64_t> p2p_wait_ns;              // of it, receives waiting for their sender; per step, mean
  std::optional<uint64_t> peak_memory_bytes;       // max over the stage's ranks with memory records
  std::optional<uint64_t> peak_activation_bytes;   // max over the stage's ranks; empty: not measured
  std::optional<double> activation_vs_last_stage;  // this stage's peak activations / the last stage's
};

struct NcclOpReport {
  uint64_t comm_id = 0;
  std::string role;
  std::string op;  // "all_reduce", ...
  int32_t comm_size = 0;
  uint64_t calls = 0;            // per member (the mean over members)
  uint64_t bytes = 0;            // per member, total, as nccl-tests counts an operation's size
  int64_t time_ns = 0;           // per member, total (kernel time, or host time of blocking calls)
  double algbw_bytes_per_s = 0;  // nccl-tests: bytes / time
  double busbw_bytes_per_s = 0;  // nccl-tests: algbw x the op's factor for n ranks
  int32_t slowest_rank = -1;     // most often the last to arrive
  uint64_t slowest_rank_count = 0;
};

struct Straggler {
  int32_t rank = 0;
  uint64_t instances_last = 0;     // collectives it arrived last at (sampled instances)
  int64_t cost_ns = 0;             // time the other members waited for it, summed (scaled to all calls)
  std::vector<std::string> roles;  // of the communicators where it was waited on
};

struct KernelStat {
  std::string name;      // readable_kernel_name(): demangled, shortened
  std::string symbol;    // as the trace has it (CUPTI's mangled symbol, or the profiler's name)
  std::string category;  // kernel_category(): gemm, attention, embedding, elementwise, nccl, other
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t mean_ns = 0, p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
};

struct CategoryStat {
  std::string category;
  uint64_t count = 0;
  int64_t total_ns = 0;
  double share = 0;  // of all kernel + copy time
};

struct StepReport {
  std::string source = "none";  // "nvtx" (step ranges), "collectives" (periodic DP collectives), "none"
  uint64_t count = 0;
  int64_t mean_ns = 0, median_ns = 0, min_ns = 0, max_ns = 0;
  std::optional<double> stdev_ns;  // empty with fewer than two timed steps
  std::vector<int64_t> step_ns;    // per step (median across ranks), at most the first 1,000
  uint64_t unfinished = 0;         // step ranges an NCCL failure closed (never ended): left out
};

// Per communicator, in a run that died or hung: how far every member got.
struct CommHang {
  uint64_t comm_id = 0;
  std::string role;
  uint64_t last_completed_by_all = 0;  // operations every member completed = the next one's sequence
  std::string next_op;                 // the operation after it
  std::vector<int32_t> entered;        // ranks that entered the next operation
  std::vector<int32_t> missing;        // members that never entered it: the ranks waited on
  int64_t waited_ns = 0;               // longest wait of an entered member, until its trace ended
  std::vector<int32_t> untraced;       // of `missing`, those that left no trace (-1: rank unknown)
  // The communicator's creation (next_op ncclCommInitRank / ncclCommSplit / ncclCommShrink):
  // comm_id is the new communicator's (init) or the parent's (split, shrink), and
  // last_completed_by_all means nothing.
  bool creation = false;
};

// A rank at the root of a hang, and where it is.
struct HangRoot {
  int32_t rank = -1;
  // "no trace"; "in call": inside `call` since since_ns (it never returned); "host code": in
  // its own code since its last NCCL operation (`call`) returned at since_ns; "exited" (with
  // status `code`) or "signal" (ended by signal `code`) at since_ns.
  std::string where;
  std::string call;
  int32_t code = 0;
  int64_t since_ns = -1;  // on the run's clock; -1 when unknown
  size_t waiting = 0;     // ranks that wait on it, directly or through others
};

// Members of a communicator that disagree at one sequence number: another operation, or the
// same one on another size, type or root.
struct Desync {
  uint64_t comm_id = 0;
  std::string role;
  uint64_t sequence = 0;
  std::vector<int32_t> ranks;
  std::string what;  // "rank 4 all_reduce, rank 6 all_reduce"
};

// A send and its receive (same communicator and sequence) of different sizes.
struct P2pMismatch {
  int32_t sender = -1;
  int32_t receiver = -1;
  std::string role;
  uint64_t sequence = 0;
};

// A rank whose last NCCL operation was a send or receive that never completed.
struct P2pHang {
  int32_t rank = 0;
  int32_t peer = -1;      // global rank; -1 when no trace tells which
  std::string op;         // "send" or "recv"
  int64_t waited_ns = 0;  // from its entry until the rank's trace ended
};

struct HangReport {
  bool suspected = false;  // some rank's trace ends early, or a collective never completed
  // Where the waiting comes from: following each waiting rank to the ranks it waits for, and
  // those on to whom they wait for, the ranks at the end (none of whose own operations is
  // stuck). `blocked` counts the ranks that wait on them, directly or through others.
  std::vector<int32_t> root_ranks;
  std::vector<HangRoot> roots;  // one per root rank, in the same order
  size_t blocked = 0;
  std::vector<CommHang> communicators;
  std::vector<P2pHang> p2p;
  std::vector<int32_t> ended_early;  // traces that stop well before the others
  std::vector<int32_t> no_trace;     // ranks without a trace, or whose trace holds no record
  std::vector<int32_t> not_closed;   // traces without an end chunk (killed, crashed)
  std::vector<Desync> desyncs;
  std::vector<P2pMismatch> p2p_mismatches;
};

// How a failed run failed, as the study's taxonomy has it, from the earliest event the traces
// show ("fatal signal", "exit status", "nccl error", "hang", "terminated").
struct FailureReport {
  std::string kind;
  int32_t rank = -1;   // where it happened first; -1 when not one rank's
  int64_t at_ns = -1;  // on the run's clock; -1 when unknown
  int64_t step = -1;   // the step it happened in (from 0), when NVTX marks steps
  int32_t code = 0;    // the signal, the exit status, or the ncclResult_t
  std::string detail;  // one line
};

// One figure as the plan predicts it and the traces measure it; `error_percent` is
// (predicted - measured) / measured x 100; both empty when the traces do not show the figure.
struct PlanFigure {
  double predicted = 0;
  std::optional<double> measured;
  std::optional<double> error_percent;
};

struct PlanStageComparison {
  int32_t stage = 0;
  PlanFigure peak_memory_bytes;  // in PlanComparison::memory_figure
  PlanFigure forward_s;          // per micro-batch
  PlanFigure backward_s;         // per micro-batch
  // GPU time a step by kind of work (a plan with stages[].work): the plan's GEMM, attention and
  // memory-bound time (its optimizer step included) against the kernel categories of the stage's
  // ranks (gemm; attention; elementwise, embedding, other and copies), a rank's time over its
  // steps, the mean over the stage's ranks. Kernels, not NVTX ranges: the GPU's own time.
  std::optional<PlanFigure> gemm_s, attention_s, memory_bound_s;
};

struct PlanComparison {
  std::string plan_path;
  // The plan's split compared: "suggested", or its baseline, "uniform" or "given_split" (the
  // split given with `pipescope plan --split`).
  std::string side;
  std::string memory_figure;  // the figure both sides give ("reserved" or "allocated")
  std::vector<PlanStageComparison> stages;
  PlanFigure bubble_fraction;  // mean over stages
  PlanFigure step_s;
  std::vector<std::string> notes;  // what differs between the plan and the run (layout, micro-batches)
};

// A time series with fixed-width buckets from `start_ns`.
struct Series {
  int64_t start_ns = 0;
  int64_t bucket_ns = 0;
  std::vector<double> values;
};

// One rank's memory over the run, per figure the trace holds (docs/design.md): `reserved` (what
// allocators took with cudaMalloc) and `allocated` (stream-ordered pool allocations); the highest
// level per bucket, a bucket without an event holding the level before it.
struct MemoryTimeline {
  int32_t rank = 0;
  std::string figure;  // the one the rank's peak and static figures come from
  std::optional<Series> reserved, allocated;
};

// A few seconds of one rank's pipeline work (its first two steps' NVTX ranges), for the HTML
// timeline excerpt.
struct TimelineSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::string category;  // "step", "forward", "backward"
};

struct TimelineLane {
  int32_t rank = 0;
  int32_t stage = 0;
  std::vector<TimelineSpan> spans;
};

struct RunReport {
  std::string dir;
  std::string run_id;
  int32_t attempt = 0;
  std::string source_format = "pipescope";  // or "kineto"
  std::vector<RankFile> files;
  std::vector<int32_t> missing_ranks;  // below the world size, without a trace
  ClockReport clock;
  LayoutReport layout;
  std::vector<RankReport> ranks;  // by rank
  // HTA's kernel-type breakdown over all ranks (hta_kernel_type_shares of their sum).
  std::vector<HtaKernelTypeShare> hta_kernel_types;
  std::vector<StageReport> stages;
  StepReport steps;
  std::vector<NcclOpReport> nccl;
  std::vector<Straggler> stragglers;  // worst first
  std::vector<KernelStat> kernels;    // top by total time
  std::vector<CategoryStat> categories;
  HangReport hang;
  std::optional<FailureReport> failure;  // empty for a run the traces show no failure in
  // Earlier attempts of the run in the same directory (the report is of the latest), each with
  // its own failure class.
  struct EarlierAttempt {
    int32_t attempt = 0;
    std::optional<FailureReport> failure;
  };
  std::vector<EarlierAttempt> earlier_attempts;
  std::optional<PlanComparison> plan;
  Series gpu_busy;                               // mean over ranks of the union of GPU activity
  std::vector<MemoryTimeline> memory_timelines;  // every rank with memory records, by rank
  std::vector<TimelineLane> timeline_excerpt;    // one rank per stage (its lowest rank)
  std::vector<std::string> findings;             // the headline lines, most important first
  std::vector<std::string> warnings;             // truncated files, drops, unaligned ranks, ...
};

}  // namespace pipescope::analysis
