// One pass over one rank's trace, keeping only what the report needs: totals, per-communicator
// traffic, a bounded sample of collective instances, the last operations per communicator,
// NVTX-derived steps and pipeline figures, a memory timeline and busy-time buckets. Memory is
// bounded by the number of communicators, kernel names and steps, never by the trace length.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/analysis/duration_histogram.h"
#include "pipescope/common/expected.h"
#include "pipescope/trace/format.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_decoder.h"

namespace pipescope::analysis {

// The NVTX naming conventions of docs/design.md, overridable by --nvtx-step/forward/backward.
struct NvtxConventions {
  std::string step = "step|iteration|train_step";
  std::string forward = "forward|fwd";
  std::string backward = "backward|bwd";
};

struct ScanOptions {
  NvtxConventions nvtx;
  // Collective instances kept per communicator for clock alignment and stragglers; beyond it
  // only every 2^k-th sequence number is kept, the same ones on every member.
  uint32_t instances_per_comm = 4096;
  // GPU intervals and memory events may arrive this much later (trace time) than later-starting
  // ones and still be ordered exactly. CUPTI writes them in completion order, so starts run
  // backwards by about the longest kernel that overlapped a shorter one, and it hands over each
  // stream's buffers on its own: a PyTorch run on an H200 delivered records up to 1.04 s late
  // (the recorder flushes CUPTI every PIPESCOPE_FLUSH_MS, 1 s by default).
  int64_t reorder_window_ns = 3'000'000'000;
  // An NCCL call waits this long (trace time) for its kernel record, which CUPTI may deliver
  // seconds after the call's own record.
  int64_t join_horizon_ns = 20'000'000'000;
  // Steps kept one by one (StepDigest, 72 bytes each); later ones are counted and folded.
  size_t max_steps = 1000;
  // The first compute islands and p2p kernels kept per rank, from which the pipeline's phases
  // are read when no NVTX range marks them (a few steps' worth; about 40 bytes each).
  uint32_t pipeline_events = 512;
  // Compute kernels closer than this belong to one island: launch gaps are not pipeline bubble.
  int64_t island_gap_ns = 20'000;
};

// A stretch of GPU compute (kernels other than NCCL's, copies) with no gap longer than
// ScanOptions::island_gap_ns inside.
struct ComputeIsland {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// One p2p operation's kernel: grouped sends and receives share one kernel and show as one event
// each. `p2p` indexes RankDigest::p2p (communicator, peer, direction).
struct P2pKernel {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t p2p = 0;
};

// One member's view of one collective (or of one p2p operation in P2pDigest). 40 bytes: at
// 1,024 ranks the samples are most of the digests' memory. A sequence number beyond 2^40 (only
// a damaged record holds one) is not sampled.
struct InstanceSample {
  static constexpr uint64_t kMaxSequence = (uint64_t{1} << 40) - 1;
  uint64_t sequence : 40 = 0;
  uint64_t op : 8 = 0;  // NcclOpType
  // What members must agree on at one sequence number (collectives: op, bytes, type, root;
  // p2p: bytes), hashed: unequal between members means a desync.
  uint64_t fingerprint : 16 = 0;
  int64_t enter_ns = 0;  // host call
  int64_t exit_ns = 0;
  int64_t start_ns = -1;  // the NCCL kernel; -1 when none was captured
  int64_t end_ns = -1;
};

inline bool is_p2p(uint8_t op) {
  return op == static_cast<uint8_t>(trace::NcclOpType::kSend) ||
         op == static_cast<uint8_t>(trace::NcclOpType::kRecv);
}

// InstanceSample::fingerprint: collectives hash op, bytes, type and root (`peer`); a send and
// its receive hash bytes alone. An all-to-all's bytes may differ between members (PyTorch's
// all_to_all_single with split sizes; the profiler-trace reader counts the larger of in and out):
// not hashed.
inline uint16_t nccl_fingerprint(uint64_t bytes, uint8_t op, uint8_t datatype, int32_t peer, bool p2p) {
  if (!p2p && op == static_cast<uint8_t>(trace::NcclOpType::kAllToAll)) bytes = 0;
  uint64_t h = 0x9E3779B97F4A7C15ull ^ bytes;
  if (!p2p) {
    h ^= (uint64_t{op} << 56) ^ (uint64_t{datatype} << 48) ^
         (static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 16);
  }
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBull;
  return static_cast<uint16_t>(h >> 48);
}

// Whether a sampling stride keeps `sequence`. Strides are powers of two (they start at 1 and
// double), so every member of a communicator keeps the sequences the largest stride keeps.
inline bool sampled(uint64_t sequence, uint32_t stride) { return (sequence & (stride - 1)) == 0; }

struct OpTotals {
  uint64_t calls = 0;
  uint64_t bytes = 0;
  int64_t time_ns = 0;         // host time of the calls (blocking calls: their whole duration)
  uint64_t kernel_calls = 0;   // calls whose kernel was found
  int64_t kernel_time_ns = 0;  // the kernels' time
};

// An NCCL call the trace shows entered and never returned (nccl_call records, format 1.3).
struct OpenCall {
  trace::NcclCallKind kind = trace::NcclCallKind::kOperation;
  uint8_t what = 0;  // NcclOpType or NcclCommEvent
  bool in_group = false;
  uint64_t comm_id = 0;
  uint64_t parent_comm_id = 0;
  uint64_t sequence = 0;  // operations: as nccl_op; split / shrink: the split index
  uint64_t bytes = 0;
  int64_t enter_ns = 0;
  int64_t seen_ns = 0;  // the last time a flush saw it running
  int32_t peer = -1;    // operations: peer or root; split: color
  int32_t rank = -1;    // in the communicator
  int32_t size = -1;
  uint8_t datatype = 0;
};

// The last NCCL call that failed (the first one's code is usually the cause; later ones follow).
struct NcclError {
  int32_t result = 0;  // ncclResult_t
  uint8_t what = 0;    // NcclOpType, or NcclCommEvent for a communicator call
  bool communicator = false;
  int64_t at_ns = 0;
};

// A point-to-point direction through one communicator, as this rank saw it.
struct P2pDigest {
  uint64_t comm_id = 0;
  int32_t peer = 0;  // NCCL rank of the peer in that communicator
  bool send = true;
  uint64_t calls = 0;
  uint64_t bytes = 0;
  int64_t time_ns = 0;  // host time
  int64_t kernel_time_ns = 0;
  int64_t first_enter_ns = -1;
  // Sampled transfers (as CommDigest's samples, in sequence order): the send and the recv of
  // one transfer end together, which ties the clocks of pipeline neighbours that share no
  // collective.
  uint32_t sample_stride = 1;
  std::vector<InstanceSample> samples;
  // Progress, for the hang view, as counts (highest sequence + 1), as CommDigest's.
  uint64_t last_entered = 0;
  uint64_t last_completed_host = 0;
  uint64_t last_completed_kernel = 0;
  int64_t last_entered_at_ns = 0;
  bool last_entered_in_group = false;  // its failure, if any, was ncclGroupEnd's: not recorded
};

struct CommDigest {
  uint64_t comm_id = 0;
  int32_t nccl_rank = -1;  // this rank's rank in the communicator
  int32_t size = 0;
  std::array<OpTotals, 11> ops{};  // by NcclOpType (index 0 unused)
  // Sampled collective instances (sampled(sequence, sample_stride)), in sequence order.
  uint32_t sample_stride = 1;
  std::vector<InstanceSample> samples;
  // Host entry times of the first collectives (at most 256): steps show as their rhythm when
  // no NVTX step range marks them.
  std::vector<int64_t> first_enters_ns;
  // Progress, for the hang view, as counts (highest sequence + 1; sequences start at 0):
  // collectives entered (an nccl_op record exists) and completed (its kernel ended, or the
  // blocking call returned without error).
  uint64_t collectives = 0;
  uint64_t last_entered = 0;
  uint64_t last_completed_host = 0;
  uint64_t last_completed_kernel = 0;
  uint8_t last_entered_op = 0;
  int64_t last_entered_at_ns = 0;
  bool last_entered_failed = false;
};

// Adaptive buckets: a fixed number of buckets whose width doubles (merging neighbours) when a
// time falls past the end; so any trace length fits.
class BucketSeries {
 public:
  explicit BucketSeries(int64_t initial_width_ns = 1'000'000, size_t capacity = 1024)
      : width_ns_(initial_width_ns), capacity_(capacity) {}
  // Adds `amount` spread over [start, end) (busy time), or a sample at `start` when end <= start.
  void add_span(int64_t start_ns, int64_t end_ns);
  void add_max(int64_t at_ns, double value);  // keeps the maximum per bucket
  int64_t origin_ns() const { return origin_ns_; }
  int64_t width_ns() const { return width_ns_; }
  const std::vector<double>& values() const { return values_; }
  bool empty() const { return values_.empty(); }

 private:
  bool place(int64_t at_ns, size_t& index, bool merge_as_max);
  int64_t origin_ns_ = 0;
  int64_t width_ns_;
  size_t capacity_;
  std::vector<double> values_;
  bool max_mode_ = false;
};

// Per kernel name (string id of this file): count, total and its durations for percentiles.
struct KernelNameStats {
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = INT64_MAX;
  int64_t max_ns = 0;
  SparseDurations durations;  // filled when the scan ends
};

// One step (an NVTX step range) on this rank, with the pipeline figures inside it.
struct StepDigest {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t forwards = 0, backwards = 0;
  int64_t forward_ns = 0, backward_ns = 0;
  int64_t first_forward_ns = -1;  // start of the first forward
  int64_t first_backward_ns = -1;
  int64_t last_forward_end_ns = -1;
  int64_t last_backward_end_ns = -1;
  // An NCCL call failed inside it (a timeout, an abort): the range closed as the stack unwound,
  // not because the step ended. It stays in the list, out of the step statistics.
  bool failed = false;
};

struct RankDigest {
  std::string path;
  trace::FileHeader header;
  std::optional<trace::ProcessInfo> process;
  std::optional<trace::ClockAnchorPayload> anchor;  // the most precise anchor
  std::optional<trace::EndPayload> end;
  trace::StopReason stop_reason = trace::StopReason::kEndOfData;
  std::string stop_detail;
  uint64_t valid_bytes = 0, total_bytes = 0, record_bytes = 0;
  uint64_t records = 0;
  uint64_t records_dropped = 0;      // from drop notices (and the end chunk when it has more)
  std::vector<std::string> notices;  // distinct notice texts, with counts, at most 32
  int32_t global_rank_from_nccl = -1;

  // Extent of every record with a time (this rank's trace clock).
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;

  // GPU time (sweep over kernel / copy intervals in start order).
  bool gpu_captured = false;
  int64_t gpu_first_ns = INT64_MAX, gpu_last_ns = INT64_MIN;
  int64_t compute_union_ns = 0, comm_union_ns = 0, compute_or_comm_union_ns = 0, any_union_ns = 0;
  // Copies and memsets, and their unions with each kind of kernel: with the above, every overlap
  // of the three kinds (HTA's kernel-type breakdown).
  int64_t copy_union_ns = 0, compute_or_copy_union_ns = 0, comm_or_copy_union_ns = 0;
  uint64_t out_of_order_intervals = 0;
  BucketSeries busy{};  // union of GPU activity per bucket, ns
  // PIPESCOPE_KERNEL_SAMPLE: the intervals in which GPU activity was not recorded, [pause,
  // resume) on this trace's clock (INT64_MAX: never resumed), and the N of "1 step in N"
  // (0: every step recorded).
  std::vector<std::pair<int64_t, int64_t>> gpu_record_pauses;
  uint32_t kernel_sample_steps = 0;
  // The same unions up to the start of the first NVTX step range, so that the report's GPU
  // figures can leave out what ran before training (model construction, compilation, loading).
  // Known when the scan read that range's start before it had swept GPU work that started later.
  struct UnionsBefore {
    bool known = false;
    int64_t at_ns = 0;
    int64_t compute_ns = 0, comm_ns = 0, compute_or_comm_ns = 0, any_ns = 0;
    int64_t copy_ns = 0, compute_or_copy_ns = 0, comm_or_copy_ns = 0;
    int64_t last_end_ns = INT64_MIN;  // the latest end of the GPU work that started before at_ns
  } before_first_step;
  // A trace not closed (no end chunk): the same unions up to the reorder window before its last
  // GPU record (or up to the last interval the scan had swept, when that is later). GPU records
  // reach the file up to that late, so in the time after it some of them are missing; the
  // report's GPU figures stop there.
  UnionsBefore before_unflushed_tail;
  // The same unions up to the start of the last step range (HTA's figures leave that step out).
  UnionsBefore before_last_step;
  // The same unions over the GPU work launched before the last step range started (where API
  // records say when; else started before it), as HTA counts; `at_ns` is that work's first
  // start. Known when every step range was read before the GPU work was swept (a converted
  // PyTorch profiler trace); otherwise HTA's figures fall back to before_last_step.
  UnionsBefore hta_launched_before_last_step;
  bool launch_times_known = false;  // the trace has API records: when its GPU work was launched

  uint64_t kernel_devices = 0;  // bit k: a kernel ran on device ordinal k (k < 64)
  // One entry per distinct kernel name, in order of first appearance.
  std::vector<KernelNameStats> kernels;
  // Kernel time by the report's category (kernel_category.h), filled when the run is loaded.
  std::map<std::string, int64_t> kernel_ns_by_category;
  std::vector<std::string> kernel_names;  // of kernels[i]
  OpTotals memcpy_totals, memset_totals;

  // How the process ended, when the trace says (format 1.3): the signal that ended it, the
  // status it exited with.
  int32_t ending_signal = 0;
  int64_t ending_signal_at_ns = 0;
  std::optional<int32_t> exit_status;
  int64_t exit_at_ns = 0;

  // NCCL.
  std::vector<CommDigest> comms;
  std::vector<OpenCall> open_calls;           // entered, never returned (by enter time)
  std::optional<NcclError> first_nccl_error;  // from nccl_call records, which keep the code
  int64_t last_nccl_return_ns = INT64_MIN;    // the latest return of any NCCL operation
  uint8_t last_nccl_return_op = 0;
  std::vector<P2pDigest> p2p;
  bool nccl_kernels_seen = false;
  uint64_t ops_without_kernel = 0;  // calls whose kernel was not found
  int64_t p2p_ns = 0;
  // The pipeline's shape without NVTX: the first compute islands and p2p kernels, in start
  // order; `*_complete` is false once the cap cut them short (later ones were not kept).
  std::vector<ComputeIsland> islands;
  std::vector<P2pKernel> p2p_kernels;
  bool islands_complete = true, p2p_kernels_complete = true;

  // Memory (device), per figure: "reserved" is what allocators took with cudaMalloc (not from a
  // pool), "allocated" the stream-ordered pool allocations (cudaMallocAsync: one per tensor).
  // The report's figure is allocated when the trace has pool allocations, else reserved; peak
  // and checkpoints are that figure's, the series both.
  bool memory_seen = false;
  bool memory_from_pool = false;  // stream-ordered allocations: the "allocated" figure
  uint64_t peak_memory_bytes = 0;
  int64_t peak_memory_at_ns = 0;
  bool reserved_seen = false, allocated_seen = false;
  BucketSeries memory_reserved{1'000'000, 1024};                 // max level per bucket
  BucketSeries memory_allocated{1'000'000, 1024};                // max level per bucket
  std::vector<std::pair<int64_t, uint64_t>> memory_checkpoints;  // (time, level) at sparse moments

  // NVTX.
  uint64_t nvtx_ranges = 0;
  std::vector<StepDigest> steps;  // closed step ranges, in order (the first ScanOptions::max_steps)
  uint64_t steps_beyond_cap = 0;  // later ones: counted, their ranges folded into `unstepped`
  StepDigest unstepped;           // forwards/backwards outside any step range
  int64_t first_forward_ns = -1;
  std::optional<int32_t> declared_stage;
  // Step, forward and backward ranges until the second step closes (at most 256), for a
  // timeline excerpt. kind: 0 step, 1 forward, 2 backward.
  struct ExcerptSpan {
    int64_t start_ns;
    int64_t end_ns;
    uint8_t kind;
  };
  std::vector<ExcerptSpan> excerpt;  // from a range named stage=<k>
};

// Reads the file at `path` (memory-mapped) in one pass, releasing the pages behind it as it goes
// (MappedFile::release_before), so that its resident memory is a few MiB, whatever the file's
// length. Fails only when it is not a trace.
Expected<RankDigest> scan_rank_trace(const std::string& path, const ScanOptions& options);
// The same over bytes in memory.
Expected<RankDigest> scan_rank_bytes(std::span<const std::byte> data, const ScanOptions& options);

// Memory level at `at_ns` from the checkpoints (the last checkpoint at or before it); 0 before all.
uint64_t memory_level_at(const RankDigest& digest, int64_t at_ns);

}  // namespace pipescope::analysis
