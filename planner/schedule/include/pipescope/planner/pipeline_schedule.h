// Pipeline schedules and their event-driven simulation, on numbers only: per-chunk forward and
// backward times and per-boundary p2p times in, per-stage timelines out. No model, no hardware.
//
// Vocabulary. p pipeline stages, m micro-batches, v model chunks per stage (v > 1 only for the
// interleaved schedule). The model is cut into p * v chunks in model order; chunk g runs on
// stage g % p as its local (virtual) chunk g / p. For GPipe and 1F1B, v = 1 and chunk = stage.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::planner {

enum class ScheduleKind {
  kGPipe,        // all forwards, then all backwards (last micro-batch first, as autograd runs them)
  kOneFOneB,     // PipeDream-flush, Megatron's non-interleaved schedule
  kInterleaved,  // Megatron's interleaved 1F1B (Narayanan et al., SC'21, section 2.2)
};

// "gpipe", "1f1b", "interleaved": the --schedule spellings of docs/design.md.
std::string_view to_string(ScheduleKind kind);

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::kOneFOneB;
  int stages = 1;          // p >= 1 (>= 2 for interleaved)
  int micro_batches = 1;   // m >= 1
  int virtual_chunks = 1;  // v: 1 for GPipe and 1F1B, >= 2 for interleaved
  // Interleaved only: N, the micro-batches a stage runs through one chunk before the next
  // (Megatron-LM's --microbatch-group-size-per-virtual-pipeline-stage); 0 means p, Megatron's
  // default. As Megatron requires: p <= N <= m, and m mod N is 0 or at least p.
  int microbatch_group = 0;
  // Whether a stage waits for its own transfers: each op that sends its output (a forward to the
  // next chunk, a backward to the previous one) holds its stage until the transfer is done, and
  // the op receiving it can start once it is (Megatron-LM before its overlapped p2p, which
  // synchronizes the device after every batch of sends and receives; DeepSpeed's pipeline engine,
  // whose sends and receives are synchronous). Otherwise a transfer is a pure latency
  // (PipelineCosts). Every op ends no earlier than it would as a latency.
  bool p2p_blocks = false;
};

// N as the schedule runs it: spec.microbatch_group, or p where it is 0.
int microbatch_group(const ScheduleSpec& spec);

// Megatron-LM's two refusals of an interleaved N (forward_backward_pipelining_with_interleaving):
// p <= N <= m, and a last group of m mod N that is empty or at least p. One user-facing line each.
Status check_microbatch_group(int64_t stages, int64_t micro_batches, int64_t group);

enum class OpKind : std::uint8_t { kForward, kBackward };

struct ScheduledOp {
  OpKind kind = OpKind::kForward;
  int chunk = 0;        // local chunk on its stage, 0..v-1 (model chunk = chunk * p + stage)
  int micro_batch = 0;  // 0..m-1

  friend bool operator==(const ScheduledOp&, const ScheduledOp&) = default;
};

// The order in which each stage runs its ops, exactly as Megatron-LM's
// forward_backward_pipelining_{without,with}_interleaving issue them (GPipe: F0..Fm-1, then
// Bm-1..B0), the interleaved one as Megatron-LM runs it since its tunable schedule (November
// 2024; read at d98e8a64). Index [stage][position]. Fails with a user-facing message on an
// invalid spec.
Expected<std::vector<std::vector<ScheduledOp>>> schedule_op_order(const ScheduleSpec& spec);

// The peak number of chunk activations each stage holds at once, in units of one chunk's
// activations for one micro-batch. Depends on the order only, never on op times: a forward's
// activations live from its start to the end of its backward, and a stage runs one op at a time.
// 1F1B: min(p - s, m); GPipe: m; interleaved: min(m * v, 2 (p - s - 1) + (v - 1) N + 1).
Expected<std::vector<int>> activations_in_flight(const ScheduleSpec& spec);

// What each stage can hold at its fullest, chunk by chunk: [stage][mix][local chunk], the number
// of micro-batches whose activations of each local chunk are alive right after one of the
// stage's forwards, keeping only the mixes no other one covers. Depends on the order only. With
// v = 1 there is one mix per stage, activations_in_flight()'s count; with v > 1 the chunks are
// not in flight equally often (the interleaved last stage holds its final chunk, the one with the
// LM head and the logits, for one micro-batch at a time but its other chunks for many), so a
// stage's peak activation memory is the largest sum over one mix (peak_activation_bytes()).
using ChunkMix = std::vector<int>;
Expected<std::vector<std::vector<ChunkMix>>> in_flight_mixes(const ScheduleSpec& spec);

// Per stage, the most chunk activations alive at once (activations_in_flight() from the mixes).
std::vector<int> in_flight_counts(const std::vector<std::vector<ChunkMix>>& mixes);

// The largest sum over mix k of mix[k] * chunk_bytes[k], with chunk_bytes one micro-batch's
// activation bytes of each local chunk of the stage whose `mixes` these are.
int64_t peak_activation_bytes(const std::vector<ChunkMix>& mixes, const std::vector<int64_t>& chunk_bytes);

// Op costs in seconds. forward_s / backward_s: one entry per model chunk (p * v); backward
// includes any recomputation. p2p_*: one entry per boundary between consecutive model chunks
// (p * v - 1), or empty for none. A p2p transfer is a pure latency: it delays the op waiting for
// it and occupies neither stage's compute (the overlapped, asynchronous-send model), unless the
// spec says the stages wait for their transfers (ScheduleSpec::p2p_blocks).
struct PipelineCosts {
  std::vector<double> forward_s;
  std::vector<double> backward_s;
  std::vector<double> p2p_forward_s;   // activation of chunk g to chunk g + 1
  std::vector<double> p2p_backward_s;  // gradient of chunk g + 1 to chunk g
};

struct OpTiming {
  ScheduledOp op;
  double start_s = 0;
  double end_s = 0;
};

struct StageTimeline {
  std::vector<OpTiming> ops;  // in the stage's execution order
  double busy_s = 0;          // sum of op durations
  double idle_s = 0;          // iteration_s - busy_s: waiting inside, before and after its ops
  int peak_activations = 0;   // as activations_in_flight()
};

struct ScheduleResult {
  std::vector<StageTimeline> stages;
  double iteration_s = 0;  // end of the last op; the first op starts at 0
  // 1 - sum(busy_s) / (p * iteration_s): the share of stage-time spent idle. With equal stages
  // and no p2p this is (p - 1) / (m + p - 1) for GPipe and 1F1B, and Narayanan's bubble time
  // over ideal time, (p - 1) / (v m), converts to it as x / (1 + x). 0 when iteration_s is 0.
  double bubble_fraction = 0;
};

// Each stage runs its ops in schedule_op_order(); an op starts when its stage is free and its
// input is there: a forward needs the previous chunk's forward of that micro-batch plus the p2p,
// a backward needs the next chunk's backward of that micro-batch plus the p2p (the last chunk's
// backward needs its own forward). Exact for any op times: every start is the max of the two.
Expected<ScheduleResult> simulate_schedule(const ScheduleSpec& spec, const PipelineCosts& costs);

}  // namespace pipescope::planner
