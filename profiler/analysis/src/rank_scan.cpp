// One streaming pass over a rank's trace (rank_digest.h). Records are handled as they are
// decoded; GPU intervals and memory events go through a reorder window because CUPTI delivers
// them in buffers, late and interleaved with host records.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <regex>
#include <unordered_map>
#include <unordered_set>

#include "interval_sweep.h"
#include "memory_level.h"
#include "nccl_join.h"
#include "nvtx_steps.h"
#include "pipescope/analysis/kernel_category.h"
#include "pipescope/analysis/rank_digest.h"
#include "pipescope/trace/trace_file.h"
#include "pipescope/trace/trace_summary.h"

namespace pipescope::analysis {
namespace {

using trace::RecordKind;

enum class IntervalClass : uint8_t { kCompute, kComm, kCopy };

struct GpuInterval {
  int64_t start_ns;
  int64_t end_ns;
  IntervalClass cls;
  int64_t launch_ns = INT64_MIN;  // when its launch began, where an API record says
};

// The unions of GPU time by kind of work (compute and communication kernels, copies and memsets),
// each alone and with each other: with inclusion and exclusion, every overlap of the three.
struct KindUnions {
  UnionLength compute, comm, compute_or_comm, any, copy, compute_or_copy, comm_or_copy;
  int64_t first_ns = INT64_MAX, last_end_ns = INT64_MIN;

  // Adds `i`; returns how much the union of all kinds grew, from `*any_from` on.
  int64_t add(const GpuInterval& i, int64_t* any_from = nullptr) {
    first_ns = std::min(first_ns, i.start_ns);
    last_end_ns = std::max(last_end_ns, i.end_ns);
    if (i.cls == IntervalClass::kCompute) compute.add(i.start_ns, i.end_ns);
    if (i.cls == IntervalClass::kComm) comm.add(i.start_ns, i.end_ns);
    if (i.cls != IntervalClass::kCopy) compute_or_comm.add(i.start_ns, i.end_ns);
    if (i.cls == IntervalClass::kCopy) copy.add(i.start_ns, i.end_ns);
    if (i.cls != IntervalClass::kComm) compute_or_copy.add(i.start_ns, i.end_ns);
    if (i.cls != IntervalClass::kCompute) comm_or_copy.add(i.start_ns, i.end_ns);
    return any.add(i.start_ns, i.end_ns, any_from);
  }
  // The unions up to `at_ns`, valid while every interval added so far started before it.
  RankDigest::UnionsBefore before(int64_t at_ns) const {
    RankDigest::UnionsBefore b;
    b.known = true;
    b.at_ns = at_ns;
    b.compute_ns = compute.total_before(at_ns);
    b.comm_ns = comm.total_before(at_ns);
    b.compute_or_comm_ns = compute_or_comm.total_before(at_ns);
    b.any_ns = any.total_before(at_ns);
    b.copy_ns = copy.total_before(at_ns);
    b.compute_or_copy_ns = compute_or_copy.total_before(at_ns);
    b.comm_or_copy_ns = comm_or_copy.total_before(at_ns);
    b.last_end_ns = last_end_ns;
    return b;
  }
};

struct MemoryEvent {
  int64_t start_ns;  // the event's time (named for ReorderWindow)
  int64_t delta_bytes;
  bool from_pool;
};

enum class NameClass : uint8_t { kUnknown, kStep, kForward, kBackward, kStage, kOther };

struct NcclOpRef {
  uint32_t comm_index;
  uint8_t op;
  uint64_t sequence;
  bool p2p;
  uint32_t p2p_index;
};

struct OpenRange {
  uint32_t name_id;
  int64_t start_ns;
};

// Start/end ranges left open at once; more (ranges never ended) are not followed.
constexpr size_t kMaxOpenRanges = 100'000;

// Host entries of a communicator's first collectives kept for step detection (rank_digest.h).
constexpr size_t kFirstEnters = 256;

// What the profiler writes when a call's communicator was unknown to it.

int64_t as_ns(uint64_t t) { return static_cast<int64_t>(std::min<uint64_t>(t, INT64_MAX)); }

class RankScanner;

// The join's callback: hands a matched call back to the scanner.
struct Matched {
  RankScanner* scanner;
  void operator()(const NcclOpRef& ref, const KernelSpan& span) const;
};

class RankScanner {
 public:
  explicit RankScanner(const ScanOptions& options)
      : options_(options),
        step_re_(options.nvtx.step, std::regex::icase | std::regex::optimize),
        forward_re_(options.nvtx.forward, std::regex::icase | std::regex::optimize),
        backward_re_(options.nvtx.backward, std::regex::icase | std::regex::optimize),
        gpu_window_(options.reorder_window_ns),
        memory_window_(options.reorder_window_ns),
        join_(options.join_horizon_ns) {}

  // `file`, when the data is a mapped file, is told after each chunk how far the scan got.
  Expected<RankDigest> scan(std::span<const std::byte> data, trace::MappedFile* file) {
    auto decoder = trace::TraceDecoder::open(data);
    if (!decoder) return decoder.error();
    d_.header = decoder->header();
    d_.total_bytes = data.size();
    trace::ChunkView chunk;
    while (decoder->next_chunk(chunk)) {
      on_chunk(chunk);
      if (file != nullptr) file->release_before(decoder->valid_bytes());
    }
    d_.stop_reason = decoder->stop_reason();
    d_.stop_detail = decoder->stop_detail();
    d_.valid_bytes = decoder->valid_bytes();
    finish();
    return std::move(d_);
  }

 private:
  void on_chunk(const trace::ChunkView& chunk) {
    switch (chunk.type) {
      case trace::ChunkType::kRecords: {
        trace::RecordCursor cursor(chunk.payload);
        trace::RecordView record;
        while (cursor.next(record)) on_record(record);
        break;
      }
      case trace::ChunkType::kStrings: trace::read_strings_chunk(chunk.payload, strings_); break;
      case trace::ChunkType::kProcessInfo:
        if (auto info = trace::decode_process_info(chunk.payload)) d_.process = std::move(*info);
        break;
      case trace::ChunkType::kClockAnchor:
        if (chunk.payload.size() >= sizeof(trace::ClockAnchorPayload)) {
          trace::ClockAnchorPayload anchor;
          std::memcpy(&anchor, chunk.payload.data(), sizeof(anchor));
          if (!d_.anchor || anchor.uncertainty_ns < d_.anchor->uncertainty_ns) d_.anchor = anchor;
        }
        break;
      case trace::ChunkType::kEnd:
        if (chunk.payload.size() >= sizeof(trace::EndPayload)) {
          trace::EndPayload end;
          std::memcpy(&end, chunk.payload.data(), sizeof(end));
          d_.end = end;
        }
        break;
      default: break;  // a newer minor version's chunk
    }
  }

  void on_record(const trace::RecordView& record) {
    ++d_.records;
    d_.record_bytes += record.bytes.size();
    switch (record.kind) {
      case RecordKind::kKernel: {
        trace::KernelRecord r;
        record.decode(r);
        on_kernel(r);
        break;
      }
      case RecordKind::kMemcpy: {
        trace::MemcpyRecord r;
        record.decode(r);
        on_copy(as_ns(r.start_ns), as_ns(r.end_ns), r.bytes, r.correlation_id, d_.memcpy_totals);
        break;
      }
      case RecordKind::kMemset: {
        trace::MemsetRecord r;
        record.decode(r);
        on_copy(as_ns(r.start_ns), as_ns(r.end_ns), r.bytes, r.correlation_id, d_.memset_totals);
        break;
      }
      case RecordKind::kApi: {
        trace::ApiRecord r;
        record.decode(r);
        if (r.correlation_id != 0) launch_by_correlation_[r.correlation_id] = as_ns(r.start_ns);
        api_records_seen_ = true;
        break;
      }
      case RecordKind::kMemory: {
        trace::MemoryRecord r;
        record.decode(r);
        on_memory(r);
        break;
      }
      case RecordKind::kNcclOp: {
        trace::NcclOpRecord r;
        record.decode(r);
        on_nccl_op(r);
        break;
      }
      case RecordKind::kNcclComm: {
        trace::NcclCommRecord r;
        record.decode(r);
        on_nccl_comm(r);
        break;
      }
      case RecordKind::kNcclCall: {
        trace::NcclCallRecord r;
        record.decode(r);
        on_nccl_call(r);
        break;
      }
      case RecordKind::kNvtx: {
        trace::NvtxRecord r;
        record.decode(r);
        on_nvtx(r);
        break;
      }
      case RecordKind::kExternalCorrelation: {
        trace::ExternalCorrelationRecord r;
        record.decode(r);
        if (r.external_kind == static_cast<uint8_t>(trace::ExternalCorrelationKind::kNccl))
          join_.add_link(r.correlation_id, r.external_id, now_ns_, matched());
        break;
      }
      case RecordKind::kNotice: {
        trace::NoticeRecord r;
        record.decode(r);
        on_notice(r);
        break;
      }
      default: break;
    }
  }

  void see_time(int64_t t) {
    d_.first_ns = std::min(d_.first_ns, t);
    d_.last_ns = std::max(d_.last_ns, t);
    now_ns_ = std::max(now_ns_, t);
  }

  void on_kernel(const trace::KernelRecord& r) {
    const int64_t start = as_ns(r.start_ns), end = std::max(as_ns(r.end_ns), as_ns(r.start_ns));
    see_time(start);
    see_time(end);
    if (r.device < 64) d_.kernel_devices |= uint64_t{1} << r.device;
    const uint32_t kernel = kernel_index(r.name_id);
    const bool nccl = kernel_nccl_[kernel] != 0;
    KernelNameStats& stats = d_.kernels[kernel];
    ++stats.count;
    stats.total_ns += end - start;
    stats.min_ns = std::min(stats.min_ns, end - start);
    stats.max_ns = std::max(stats.max_ns, end - start);
    kernel_durations_[kernel].add(end - start);
    push_interval(
        {start, end, nccl ? IntervalClass::kComm : IntervalClass::kCompute, launch_of(r.correlation_id)});
    if (nccl) {
      d_.nccl_kernels_seen = true;
      join_.add_kernel(r.correlation_id, KernelSpan{start, end}, now_ns_, matched());
    }
  }

  void on_copy(int64_t start, int64_t end, uint64_t bytes, uint32_t correlation, OpTotals& totals) {
    end = std::max(end, start);
    see_time(start);
    see_time(end);
    ++totals.calls;
    totals.bytes += bytes;
    totals.time_ns += end - start;
    push_interval({start, end, IntervalClass::kCopy, launch_of(correlation)});
  }

  // When the GPU work of `correlation` was launched, where an API record said (each is asked
  // for once: the entry goes).
  int64_t launch_of(uint32_t correlation) {
    if (launch_by_correlation_.empty() || correlation == 0) return INT64_MIN;
    const auto it = launch_by_correlation_.find(correlation);
    if (it == launch_by_correlation_.end()) return INT64_MIN;
    const int64_t launch = it->second;
    launch_by_correlation_.erase(it);
    return launch;
  }

  void push_interval(const GpuInterval& interval) {
    d_.gpu_captured = true;
    d_.gpu_first_ns = std::min(d_.gpu_first_ns, interval.start_ns);
    d_.gpu_last_ns = std::max(d_.gpu_last_ns, interval.end_ns);
    if (!gpu_window_.push(interval, [this](const GpuInterval& i) { sweep(i); })) ++d_.out_of_order_intervals;
  }

  // The first step's start: the unions up to it are taken when the sweep gets there, unless it
  // is there already (GPU work that started later was read first), when they are not known.
  void on_step_start(int64_t t) {
    // The latest step's start: HTA leaves out the GPU work from the last step's start on.
    if (t > last_step_ns_) {
      last_step_ns_ = t;
      last_step_pending_ = last_swept_start_ns_ < t;
      d_.before_last_step = {};
      // GPU work was already judged against an earlier last step: the launch-ordered figures
      // no longer hold.
      if (last_swept_start_ns_ != INT64_MIN) hta_by_launch_valid_ = false;
    }
    if (step_start_seen_) return;
    step_start_seen_ = true;
    first_step_ns_ = t;
    if (last_swept_start_ns_ >= t) return;
    before_first_step_pending_ = true;
  }

  // The unions up to `at_ns`, valid while every interval swept so far started before it.
  RankDigest::UnionsBefore unions_before(int64_t at_ns) const { return all_.before(at_ns); }

  void take_unions_before_last_step() {
    last_step_pending_ = false;
    d_.before_last_step = unions_before(last_step_ns_);
  }

  void take_unions_before_first_step() {
    before_first_step_pending_ = false;
    d_.before_first_step = unions_before(first_step_ns_);
  }

  void take_unions_before_tail() {
    tail_pending_ = false;
    d_.before_unflushed_tail = unions_before(tail_cut_ns_);
  }

  void sweep(const GpuInterval& i) {
    if (before_first_step_pending_ && i.start_ns >= first_step_ns_) take_unions_before_first_step();
    if (tail_pending_ && i.start_ns >= tail_cut_ns_) take_unions_before_tail();
    if (last_step_pending_ && i.start_ns >= last_step_ns_) take_unions_before_last_step();
    last_swept_start_ns_ = std::max(last_swept_start_ns_, i.start_ns);
    if (i.cls != IntervalClass::kComm) add_to_island(i);
    int64_t from = 0;
    if (all_.add(i, &from) > 0) d_.busy.add_span(from, i.end_ns);
    // HTA's set: what was launched before the last step's start; in a trace with launches in it,
    // GPU work that no launch accounts for is left out, as HTA leaves it out; in one without,
    // what started before the last step's start.
    const bool launched_before = i.launch_ns != INT64_MIN ? i.launch_ns < last_step_ns_
                                                          : !api_records_seen_ && i.start_ns < last_step_ns_;
    if (last_step_ns_ == INT64_MIN || launched_before) hta_unions_.add(i);
  }

  // Islands in start order (the sweep's); one that arrived out of order only stretches the open one.
  void add_to_island(const GpuInterval& i) {
    if (island_.end_ns > INT64_MIN && i.start_ns <= island_.end_ns + options_.island_gap_ns) {
      island_.end_ns = std::max(island_.end_ns, i.end_ns);
      return;
    }
    close_island();
    island_ = {i.start_ns, i.end_ns};
  }

  void close_island() {
    if (island_.end_ns == INT64_MIN) return;
    if (d_.islands.size() < options_.pipeline_events) {
      d_.islands.push_back(island_);
    } else {
      d_.islands_complete = false;
    }
    island_ = {INT64_MIN, INT64_MIN};
  }

  void on_memory(const trace::MemoryRecord& r) {
    const auto op = static_cast<trace::MemoryOperation>(r.operation);
    if (op != trace::MemoryOperation::kAllocate && op != trace::MemoryOperation::kRelease) return;
    const auto kind = static_cast<trace::MemoryKind>(r.memory_kind);
    if (kind != trace::MemoryKind::kDevice && kind != trace::MemoryKind::kUnknown) return;
    const int64_t t = as_ns(r.timestamp_ns);
    see_time(t);
    const int64_t bytes = static_cast<int64_t>(std::min<uint64_t>(r.bytes, INT64_MAX));
    const MemoryEvent event{t, op == trace::MemoryOperation::kAllocate ? bytes : -bytes,
                            (r.flags & trace::kMemoryFlagFromPool) != 0};
    memory_window_.push(event, [this](const MemoryEvent& e) { apply_memory(e); });
  }

  void apply_memory(const MemoryEvent& e) {
    d_.memory_seen = true;
    MemoryLevel& m = e.from_pool ? allocated_ : reserved_;
    (e.from_pool ? d_.allocated_seen : d_.reserved_seen) = true;
    m.level = std::max<int64_t>(0, m.level + e.delta_bytes);
    const auto level = static_cast<uint64_t>(m.level);
    if (level > m.peak_bytes) {
      m.peak_bytes = level;
      m.peak_at_ns = e.start_ns;
    }
    (e.from_pool ? d_.memory_allocated : d_.memory_reserved).add_max(e.start_ns, static_cast<double>(level));
    m.add_checkpoint(e.start_ns, level);
  }

  uint32_t comm_index(uint64_t comm_id) {
    auto [it, fresh] = comm_index_.try_emplace(comm_id, static_cast<uint32_t>(d_.comms.size()));
    if (fresh) {
      d_.comms.emplace_back();
      d_.comms.back().comm_id = comm_id;
    }
    return it->second;
  }

  void on_nccl_comm(const trace::NcclCommRecord& r) {
    see_time(as_ns(r.start_ns));
    if (r.global_rank >= 0) d_.global_rank_from_nccl = r.global_rank;
    const auto event = static_cast<trace::NcclCommEvent>(r.event);
    if (event != trace::NcclCommEvent::kInit && event != trace::NcclCommEvent::kSplit &&
        event != trace::NcclCommEvent::kShrink)
      return;
    if (r.comm_handle == 0) return;  // creation failed
    CommDigest& comm = d_.comms[comm_index(r.comm_id)];
    comm.nccl_rank = r.rank;
    comm.size = r.size;
  }

  uint32_t p2p_index(uint64_t comm_id, int32_t peer, bool send) {
    for (uint32_t i = 0; i < d_.p2p.size(); ++i) {
      const P2pDigest& p = d_.p2p[i];
      if (p.comm_id == comm_id && p.peer == peer && p.send == send) return i;
    }
    P2pDigest fresh;
    fresh.comm_id = comm_id;
    fresh.peer = peer;
    fresh.send = send;
    d_.p2p.push_back(std::move(fresh));
    return static_cast<uint32_t>(d_.p2p.size() - 1);
  }

  static uint16_t fingerprint_of(const trace::NcclOpRecord& r, bool p2p) {
    return nccl_fingerprint(r.bytes, r.op, r.datatype, r.peer, p2p);
  }

  static uint64_t call_key(const trace::NcclCallRecord& r) {
    return uint64_t{r.thread_id} << 32 | r.call_serial;
  }

  // In flight and returned records pair by (thread, serial), in any order in the file (they
  // come from different threads' buffers, and a call is written in flight at each flush).
  void on_nccl_call(const trace::NcclCallRecord& r) {
    see_time(as_ns(r.at_ns));
    if (r.global_rank >= 0) d_.global_rank_from_nccl = r.global_rank;
    const uint64_t key = call_key(r);
    if (r.state == static_cast<uint8_t>(trace::NcclCallState::kReturned)) {
      open_by_key_.erase(key);
      returned_.insert(key);
      if (r.result != 0 && r.result != 7 /* ncclInProgress */ && !d_.first_nccl_error)
        d_.first_nccl_error = NcclError{
            r.result, r.what, r.call_kind == static_cast<uint8_t>(trace::NcclCallKind::kCommunicator),
            as_ns(r.at_ns)};
      return;
    }
    if (r.state != static_cast<uint8_t>(trace::NcclCallState::kInFlight)) return;
    if (returned_.count(key) != 0) return;
    OpenCall call;
    call.kind = static_cast<trace::NcclCallKind>(r.call_kind);
    call.what = r.what;
    call.in_group = (r.flags & trace::kNcclFlagInGroup) != 0;
    call.comm_id = r.comm_id;
    call.parent_comm_id = r.parent_comm_id;
    call.sequence = r.sequence;
    call.bytes = r.bytes;
    call.enter_ns = as_ns(r.enter_ns);
    call.seen_ns = as_ns(r.at_ns);
    call.peer = r.peer;
    call.rank = r.rank;
    call.size = r.size;
    call.datatype = r.datatype;
    // Written again at each flush: the latest sighting counts; an entry time of 0 (entered
    // outside a capture window, the clock not read) is bounded by the first.
    const auto [it, fresh] = open_by_key_.try_emplace(key, call);
    if (call.enter_ns == 0)
      it->second.enter_ns = fresh ? call.seen_ns : std::min(it->second.enter_ns, call.seen_ns);
    it->second.seen_ns = std::max(it->second.seen_ns, call.seen_ns);
  }

  // Calls that never returned count as entered: the hang view sees how far each member got.
  void apply_open_calls() {
    for (auto& [key, call] : open_by_key_) d_.open_calls.push_back(call);
    std::sort(d_.open_calls.begin(), d_.open_calls.end(),
              [](const OpenCall& a, const OpenCall& b) { return a.enter_ns < b.enter_ns; });
    for (const OpenCall& call : d_.open_calls) {
      if (call.kind != trace::NcclCallKind::kOperation || call.sequence == trace::kNcclUnknownSequence ||
          call.comm_id == 0)
        continue;
      const uint8_t op = call.what <= 10 ? call.what : 0;
      if (is_p2p(op)) {
        P2pDigest& p =
            d_.p2p[p2p_index(call.comm_id, call.peer, op == static_cast<uint8_t>(trace::NcclOpType::kSend))];
        if (call.sequence + 1 >= p.last_entered) {
          p.last_entered = call.sequence + 1;
          p.last_entered_at_ns = call.enter_ns;
          p.last_entered_in_group = call.in_group;
        }
      } else {
        CommDigest& comm = d_.comms[comm_index(call.comm_id)];
        if (call.sequence + 1 >= comm.last_entered) {
          comm.last_entered = call.sequence + 1;
          comm.last_entered_op = op;
          comm.last_entered_at_ns = call.enter_ns;
          comm.last_entered_failed = false;
        }
      }
    }
  }

  void on_nccl_op(const trace::NcclOpRecord& r) {
    const int64_t enter = as_ns(r.host_enter_ns), exit = std::max(as_ns(r.host_exit_ns), enter);
    see_time(enter);
    see_time(exit);
    if (exit >= d_.last_nccl_return_ns) {
      d_.last_nccl_return_ns = exit;
      d_.last_nccl_return_op = r.op;
    }
    const uint8_t op = r.op <= 10 ? r.op : 0;
    const uint32_t ci = comm_index(r.comm_id);
    CommDigest& comm = d_.comms[ci];
    OpTotals& totals = comm.ops[op];
    ++totals.calls;
    totals.bytes += r.bytes;
    totals.time_ns += exit - enter;
    const bool failed = (r.flags & trace::kNcclFlagFailed) != 0;
    if (failed) latest_failure_ns_ = std::max(latest_failure_ns_, enter);
    NcclOpRef ref{ci, op, r.sequence, is_p2p(op), 0};
    if (ref.p2p) {
      const bool send = op == static_cast<uint8_t>(trace::NcclOpType::kSend);
      ref.p2p_index = p2p_index(r.comm_id, r.peer, send);
      P2pDigest& p = d_.p2p[ref.p2p_index];
      ++p.calls;
      p.bytes += r.bytes;
      p.time_ns += exit - enter;
      if (p.first_enter_ns < 0 || enter < p.first_enter_ns) p.first_enter_ns = enter;
      if (!failed && r.sequence != trace::kNcclUnknownSequence)
        add_sample(p.sample_stride, p.samples, r.sequence, enter, exit, op, fingerprint_of(r, true));
      if (r.sequence != trace::kNcclUnknownSequence) {
        if (r.sequence + 1 >= p.last_entered) {
          p.last_entered = r.sequence + 1;
          p.last_entered_at_ns = enter;
          p.last_entered_in_group = (r.flags & trace::kNcclFlagInGroup) != 0;
        }
        if (!failed) p.last_completed_host = std::max(p.last_completed_host, r.sequence + 1);
      }
    } else if (r.sequence != trace::kNcclUnknownSequence) {
      ++comm.collectives;
      if (comm.first_enters_ns.size() < kFirstEnters) {
        // Grown to the cap, not reserved at it: most communicators run a few collectives a step.
        if (comm.first_enters_ns.size() == comm.first_enters_ns.capacity())
          comm.first_enters_ns.reserve(
              std::min(std::max<size_t>(8, 2 * comm.first_enters_ns.size()), kFirstEnters));
        comm.first_enters_ns.push_back(enter);
      }
      if (r.sequence + 1 >= comm.last_entered) {
        comm.last_entered = r.sequence + 1;
        comm.last_entered_op = op;
        comm.last_entered_at_ns = enter;
        comm.last_entered_failed = failed;
      }
      if (!failed) comm.last_completed_host = std::max(comm.last_completed_host, r.sequence + 1);
      if (!failed)
        add_sample(comm.sample_stride, comm.samples, r.sequence, enter, exit, op, fingerprint_of(r, false));
    }
    host_p2p_ns_ += ref.p2p ? exit - enter : 0;
    if (r.external_correlation_id != 0) join_.add_op(r.external_correlation_id, ref, now_ns_, matched());
  }

  void add_sample(uint32_t& stride, std::vector<InstanceSample>& samples, uint64_t sequence, int64_t enter_ns,
                  int64_t exit_ns, uint8_t op, uint16_t fingerprint) {
    if (!sampled(sequence, stride) || sequence > InstanceSample::kMaxSequence) return;
    // Exactly the cap (and the one that halves the list), not a doubling vector's slack.
    if (samples.size() == samples.capacity())
      samples.reserve(std::min<size_t>(std::max<size_t>(16, 2 * samples.size()),
                                       size_t{options_.instances_per_comm} + 1));
    InstanceSample& s = samples.emplace_back();
    s.sequence = sequence;
    s.op = op;
    s.fingerprint = fingerprint;
    s.enter_ns = enter_ns;
    s.exit_ns = exit_ns;
    if (samples.size() <= options_.instances_per_comm) return;
    stride *= 2;
    std::erase_if(samples, [&](const InstanceSample& kept) { return !sampled(kept.sequence, stride); });
  }

  static void set_kernel(std::vector<InstanceSample>& samples, uint64_t sequence, const KernelSpan& span) {
    auto it = std::lower_bound(samples.begin(), samples.end(), sequence,
                               [](const InstanceSample& s, uint64_t seq) { return s.sequence < seq; });
    if (it != samples.end() && it->sequence == sequence) {
      it->start_ns = span.start_ns;
      it->end_ns = span.end_ns;
    }
  }

  Matched matched() { return Matched{this}; }

 public:
  void on_matched(const NcclOpRef& ref, const KernelSpan& span) {
    CommDigest& comm = d_.comms[ref.comm_index];
    const int64_t duration = span.end_ns - span.start_ns;
    ++comm.ops[ref.op].kernel_calls;
    comm.ops[ref.op].kernel_time_ns += duration;
    if (ref.p2p) {
      kernel_p2p_ns_ += duration;
      P2pDigest& p = d_.p2p[ref.p2p_index];
      p.kernel_time_ns += duration;
      p.last_completed_kernel = std::max(p.last_completed_kernel, ref.sequence + 1);
      set_kernel(p.samples, ref.sequence, span);
      if (d_.p2p_kernels.size() < options_.pipeline_events) {
        d_.p2p_kernels.push_back(P2pKernel{span.start_ns, span.end_ns, ref.p2p_index});
      } else {
        d_.p2p_kernels_complete = false;
      }
      return;
    }
    comm.last_completed_kernel = std::max(comm.last_completed_kernel, ref.sequence + 1);
    set_kernel(comm.samples, ref.sequence, span);
  }

 private:
  // A name id the string table never defined (a damaged record) counts as no name, so that no
  // table grows to the id's size.
  uint32_t known_name(uint32_t name_id) const { return name_id <= strings_.size() ? name_id : 0; }

  NameClass classify(uint32_t name_id) {
    name_id = known_name(name_id);
    if (name_id >= name_classes_.size()) name_classes_.resize(name_id + 1, NameClass::kUnknown);
    NameClass& cls = name_classes_[name_id];
    if (cls != NameClass::kUnknown) return cls;
    const std::string name(strings_.get(name_id));
    if (name.starts_with("stage=")) {
      cls = NameClass::kStage;
    } else if (std::regex_search(name, step_re_)) {
      cls = NameClass::kStep;
    } else if (std::regex_search(name, backward_re_)) {
      cls = NameClass::kBackward;  // before forward: "backward" must not count as "forward"
    } else if (std::regex_search(name, forward_re_)) {
      cls = NameClass::kForward;
    } else {
      cls = NameClass::kOther;
    }
    return cls;
  }

  void on_nvtx(const trace::NvtxRecord& r) {
    const int64_t t = as_ns(r.timestamp_ns);
    see_time(t);
    const auto event = static_cast<trace::NvtxEvent>(r.event);
    switch (event) {
      case trace::NvtxEvent::kPush: {
        std::vector<OpenRange>& open = open_by_thread_[r.thread_id];
        // A step range inside another (Optimizer.step inside ProfilerStep#N) starts no step.
        const bool outermost_step = classify(r.name_id) == NameClass::kStep &&
                                    std::none_of(open.begin(), open.end(), [&](const OpenRange& o) {
                                      return classify(o.name_id) == NameClass::kStep;
                                    });
        open.push_back(OpenRange{r.name_id, t});
        if (outermost_step) on_step_start(t);
        break;
      }
      case trace::NvtxEvent::kPop: {
        auto it = open_by_thread_.find(r.thread_id);
        if (it == open_by_thread_.end() || it->second.empty()) break;
        const OpenRange open = it->second.back();
        it->second.pop_back();
        on_range(open.name_id, open.start_ns, t);
        break;
      }
      case trace::NvtxEvent::kStart:
        if (open_by_id_.size() < kMaxOpenRanges) open_by_id_[r.range_id] = OpenRange{r.name_id, t};
        if (classify(r.name_id) == NameClass::kStep) on_step_start(t);
        break;
      case trace::NvtxEvent::kMark:  // PIPESCOPE_STAGE's declaration is a mark "stage=<k>"
        if (classify(r.name_id) == NameClass::kStage) declare_stage(r.name_id);
        break;
      case trace::NvtxEvent::kEnd: {
        auto it = open_by_id_.find(r.range_id);
        if (it == open_by_id_.end()) break;
        on_range(it->second.name_id, it->second.start_ns, t);
        open_by_id_.erase(it);
        break;
      }
      default: break;
    }
  }

  void on_range(uint32_t name_id, int64_t start, int64_t end) {
    ++d_.nvtx_ranges;
    const NameClass cls = classify(name_id);
    if (d_.steps.size() < 2 && d_.excerpt.size() < 256 &&
        (cls == NameClass::kStep || cls == NameClass::kForward || cls == NameClass::kBackward))
      d_.excerpt.push_back({start, end,
                            static_cast<uint8_t>(cls == NameClass::kStep      ? 0
                                                 : cls == NameClass::kForward ? 1
                                                                              : 2)});
    switch (cls) {
      case NameClass::kStep: steps_.on_step(start, end, latest_failure_ns_); break;
      case NameClass::kForward:
      case NameClass::kBackward: steps_.on_pipeline_range(start, end, cls == NameClass::kForward); break;
      case NameClass::kStage: declare_stage(name_id); break;
      default: break;
    }
  }

  void declare_stage(uint32_t name_id) {
    const std::string_view name = strings_.get(known_name(name_id));
    int stage = -1;
    if (name.size() > 6 && std::sscanf(std::string(name.substr(6)).c_str(), "%d", &stage) == 1 && stage >= 0)
      d_.declared_stage = stage;
  }

  void on_notice(const trace::NoticeRecord& r) {
    const auto code = static_cast<trace::NoticeCode>(r.code);
    if (code == trace::NoticeCode::kProcessSignal) {
      if (d_.ending_signal == 0) {  // the first: a fatal signal's handler may raise it again
        d_.ending_signal = static_cast<int32_t>(r.count);
        d_.ending_signal_at_ns = as_ns(r.timestamp_ns);
      }
      return;
    }
    if (code == trace::NoticeCode::kProcessExit) {
      d_.exit_status = static_cast<int32_t>(static_cast<uint32_t>(r.count));
      d_.exit_at_ns = as_ns(r.timestamp_ns);
      return;
    }
    if (code == trace::NoticeCode::kKernelSamplingPaused ||
        code == trace::NoticeCode::kKernelSamplingResumed) {
      on_kernel_sampling(code == trace::NoticeCode::kKernelSamplingPaused,
                         static_cast<int64_t>(r.timestamp_ns), strings_.get(r.message_id));
      return;
    }
    if (code == trace::NoticeCode::kRecordsDropped || code == trace::NoticeCode::kCuptiBufferDropped)
      d_.records_dropped += r.count;
    if (code == trace::NoticeCode::kWindowOpened || code == trace::NoticeCode::kWindowClosed ||
        code == trace::NoticeCode::kClockOffsetApplied)
      return;
    std::string text = notice_text(code);
    if (const std::string_view message = strings_.get(r.message_id); !message.empty())
      text += ": " + std::string(message);
    if (std::find(d_.notices.begin(), d_.notices.end(), text) == d_.notices.end() && d_.notices.size() < 32)
      d_.notices.push_back(std::move(text));
  }

  // Notices are written in time order by one session: a pause opens an interval, the next resume
  // closes it.
  void on_kernel_sampling(bool paused, int64_t at_ns, std::string_view message) {
    if (d_.kernel_sample_steps == 0) {
      // "... for 1 step in N (PIPESCOPE_KERNEL_SAMPLE)": the N, for the report's line.
      const size_t in = message.find("step in ");
      unsigned n = 0;
      if (in != std::string_view::npos &&
          std::sscanf(std::string(message.substr(in + 8)).c_str(), "%u", &n) == 1)
        d_.kernel_sample_steps = n;
      if (d_.kernel_sample_steps == 0) d_.kernel_sample_steps = 1;  // sampled, N unknown
    }
    auto& pauses = d_.gpu_record_pauses;
    if (paused) {
      if (pauses.empty() || pauses.back().second != INT64_MAX) pauses.emplace_back(at_ns, INT64_MAX);
    } else if (!pauses.empty() && pauses.back().second == INT64_MAX) {
      pauses.back().second = at_ns;
    }
  }

  static std::string notice_text(trace::NoticeCode code) {
    switch (code) {
      case trace::NoticeCode::kRecordsDropped: return "records dropped";
      case trace::NoticeCode::kCuptiBufferDropped: return "CUPTI dropped records";
      case trace::NoticeCode::kCaptureLost: return "capture lost to another tool";
      case trace::NoticeCode::kCaptureResumed: return "capture resumed";
      case trace::NoticeCode::kInjectionConflict: return "another tool's injection kept";
      case trace::NoticeCode::kUnsupportedVersion: return "unsupported library version";
      case trace::NoticeCode::kKindUnavailable: return "kind unavailable";
      default: return "notice " + std::to_string(static_cast<int>(code));
    }
  }

  // One entry per distinct kernel name (statistics, name, whether it is NCCL's), found through
  // an index per string id: string ids grow with every name the trace defines (NVTX names with
  // step numbers, ...), kernel names do not.
  uint32_t kernel_index(uint32_t name_id) {
    name_id = known_name(name_id);
    if (name_id >= kernel_slot_.size()) kernel_slot_.resize(name_id + 1, 0);
    uint32_t& slot = kernel_slot_[name_id];
    if (slot == 0) [[unlikely]]
      slot = add_kernel_name(name_id);
    return slot - 1;
  }

  // Out of line: once per name, and the per-record path above stays small enough to inline.
  [[gnu::noinline]] uint32_t add_kernel_name(uint32_t name_id) {
    const std::string_view name = strings_.get(name_id);
    d_.kernels.emplace_back();
    kernel_durations_.emplace_back();
    d_.kernel_names.emplace_back(name);
    kernel_nccl_.push_back(is_nccl_kernel(name) ? 1 : 0);
    return static_cast<uint32_t>(d_.kernels.size());
  }

  void finish() {
    apply_open_calls();
    // Not closed: where the GPU records stop being complete, known only now.
    if (!d_.end && d_.gpu_captured) {
      tail_cut_ns_ = std::max(d_.gpu_last_ns - options_.reorder_window_ns, last_swept_start_ns_);
      if (last_swept_start_ns_ >= tail_cut_ns_) {
        take_unions_before_tail();
      } else {
        tail_pending_ = true;
      }
    }
    gpu_window_.drain([this](const GpuInterval& i) { sweep(i); });
    if (before_first_step_pending_) take_unions_before_first_step();
    if (tail_pending_) take_unions_before_tail();
    if (last_step_pending_) take_unions_before_last_step();
    close_island();
    // Matched in the join's order, which follows the records' arrival: put in start order.
    std::stable_sort(d_.p2p_kernels.begin(), d_.p2p_kernels.end(),
                     [](const P2pKernel& a, const P2pKernel& b) { return a.start_ns < b.start_ns; });
    // The report merges members' samples by sequence; only a damaged trace has them otherwise.
    const auto in_order = [](std::vector<InstanceSample>& samples) {
      const auto by_sequence = [](const InstanceSample& a, const InstanceSample& b) {
        return a.sequence < b.sequence;
      };
      if (!std::is_sorted(samples.begin(), samples.end(), by_sequence))
        std::stable_sort(samples.begin(), samples.end(), by_sequence);
    };
    for (CommDigest& c : d_.comms) in_order(c.samples);
    for (P2pDigest& p : d_.p2p) in_order(p.samples);
    memory_window_.drain([this](const MemoryEvent& e) { apply_memory(e); });
    d_.memory_from_pool = d_.allocated_seen;
    MemoryLevel& figure = d_.memory_from_pool ? allocated_ : reserved_;
    d_.peak_memory_bytes = figure.peak_bytes;
    d_.peak_memory_at_ns = figure.peak_at_ns;
    d_.memory_checkpoints = std::move(figure.checkpoints);
    d_.compute_union_ns = all_.compute.total();
    d_.comm_union_ns = all_.comm.total();
    d_.compute_or_comm_union_ns = all_.compute_or_comm.total();
    d_.any_union_ns = all_.any.total();
    d_.copy_union_ns = all_.copy.total();
    d_.compute_or_copy_union_ns = all_.compute_or_copy.total();
    d_.comm_or_copy_union_ns = all_.comm_or_copy.total();
    if (hta_by_launch_valid_ && hta_unions_.any.total() > 0) {
      d_.hta_launched_before_last_step = hta_unions_.before(INT64_MAX);
      d_.hta_launched_before_last_step.at_ns = hta_unions_.first_ns;
    }
    d_.launch_times_known = api_records_seen_;
    d_.p2p_ns = d_.nccl_kernels_seen ? kernel_p2p_ns_ : host_p2p_ns_;
    steps_.finish();
    if (d_.end && d_.end->records_dropped > d_.records_dropped) d_.records_dropped = d_.end->records_dropped;
    d_.ops_without_kernel = join_.ops_without_kernel();
    for (size_t k = 0; k < d_.kernels.size(); ++k) d_.kernels[k].durations = kernel_durations_[k].buckets();
    std::vector<DurationRecorder>().swap(kernel_durations_);
  }

  const ScanOptions& options_;
  RankDigest d_;
  // Flight records: calls seen in flight and not returned (the latest sighting), and calls that
  // returned (8 bytes per call a flush caught running).
  std::unordered_map<uint64_t, OpenCall> open_by_key_;
  std::unordered_set<uint64_t> returned_;
  trace::StringTable strings_;
  std::regex step_re_, forward_re_, backward_re_;
  std::vector<NameClass> name_classes_;
  std::vector<uint32_t> kernel_slot_;               // per name id: 0 none, else index + 1 in d_.kernels
  std::vector<uint8_t> kernel_nccl_;                // per d_.kernels index: 1 when an NCCL kernel
  std::vector<DurationRecorder> kernel_durations_;  // per d_.kernels index, until finish()
  bool step_start_seen_ = false, before_first_step_pending_ = false;
  int64_t first_step_ns_ = 0;
  int64_t last_swept_start_ns_ = INT64_MIN;
  bool last_step_pending_ = false;
  int64_t last_step_ns_ = INT64_MIN;
  int64_t tail_cut_ns_ = 0;
  bool tail_pending_ = false;
  int64_t now_ns_ = INT64_MIN;

  ReorderWindow<GpuInterval> gpu_window_;
  KindUnions all_;  // every GPU interval swept
  // The same unions over HTA's set (sweep()), valid while no step started after the sweep began.
  KindUnions hta_unions_;
  bool hta_by_launch_valid_ = true;
  bool api_records_seen_ = false;
  std::unordered_map<uint32_t, int64_t> launch_by_correlation_;
  ComputeIsland island_{INT64_MIN, INT64_MIN};  // the open one
  ReorderWindow<MemoryEvent> memory_window_;
  MemoryLevel reserved_, allocated_;

  std::unordered_map<uint64_t, uint32_t> comm_index_;
  NcclKernelJoin<NcclOpRef> join_;
  int64_t host_p2p_ns_ = 0, kernel_p2p_ns_ = 0;
  int64_t latest_failure_ns_ = INT64_MIN;  // entry of the latest NCCL call that failed

  std::unordered_map<uint32_t, std::vector<OpenRange>> open_by_thread_;
  std::unordered_map<uint64_t, OpenRange> open_by_id_;
  NvtxSteps steps_{d_, options_.max_steps};
};

void Matched::operator()(const NcclOpRef& ref, const KernelSpan& span) const {
  scanner->on_matched(ref, span);
}

}  // namespace

namespace {

Expected<RankDigest> scan(std::span<const std::byte> data, trace::MappedFile* file,
                          const ScanOptions& options) {
  try {
    RankScanner scanner(options);
    return scanner.scan(data, file);
  } catch (const std::regex_error& e) {
    return Error("invalid NVTX regular expression: " + std::string(e.what()));
  }
}

}  // namespace

Expected<RankDigest> scan_rank_bytes(std::span<const std::byte> data, const ScanOptions& options) {
  return scan(data, nullptr, options);
}

Expected<RankDigest> scan_rank_trace(const std::string& path, const ScanOptions& options) {
  auto file = trace::MappedFile::open(path);
  if (!file) return file.error();
  auto digest = scan(file->bytes(), &*file, options);
  if (!digest) return Error(path + ": " + digest.error().message);
  digest->path = path;
  return digest;
}

uint64_t memory_level_at(const RankDigest& digest, int64_t at_ns) {
  const auto& points = digest.memory_checkpoints;
  auto it = std::upper_bound(points.begin(), points.end(), at_ns,
                             [](int64_t t, const std::pair<int64_t, uint64_t>& p) { return t < p.first; });
  if (it == points.begin()) return 0;
  return std::prev(it)->second;
}

}  // namespace pipescope::analysis
