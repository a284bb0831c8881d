#include "nccl_scan.h"

#include <algorithm>
#include <utility>

namespace pipescope::analysis::detail {
namespace {

// Host entries of a communicator's first collectives kept for step detection (rank_digest.h).
constexpr size_t kFirstEnters = 256;

uint16_t fingerprint_of(const trace::NcclOpRecord& r, bool p2p) {
  return nccl_fingerprint(r.bytes, r.op, r.datatype, r.peer, p2p);
}

uint64_t call_key(const trace::NcclCallRecord& r) { return uint64_t{r.thread_id} << 32 | r.call_serial; }

void set_kernel(std::vector<InstanceSample>& samples, uint64_t sequence, const KernelSpan& span) {
  auto it = std::lower_bound(samples.begin(), samples.end(), sequence,
                             [](const InstanceSample& s, uint64_t seq) { return s.sequence < seq; });
  if (it != samples.end() && it->sequence == sequence) {
    it->start_ns = span.start_ns;
    it->end_ns = span.end_ns;
  }
}

}  // namespace

uint32_t NcclScan::comm_index(uint64_t comm_id) {
  auto [it, fresh] = comm_index_.try_emplace(comm_id, static_cast<uint32_t>(d_.comms.size()));
  if (fresh) {
    d_.comms.emplace_back();
    d_.comms.back().comm_id = comm_id;
  }
  return it->second;
}

uint32_t NcclScan::p2p_index(uint64_t comm_id, int32_t peer, bool send) {
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

void NcclScan::on_comm(const trace::NcclCommRecord& r) {
  clock_.see(as_ns(r.start_ns));
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

// In flight and returned records pair by (thread, serial), in any order in the file (they
// come from different threads' buffers, and a call is written in flight at each flush).
void NcclScan::on_call(const trace::NcclCallRecord& r) {
  clock_.see(as_ns(r.at_ns));
  if (r.global_rank >= 0) d_.global_rank_from_nccl = r.global_rank;
  const uint64_t key = call_key(r);
  if (r.state == static_cast<uint8_t>(trace::NcclCallState::kReturned)) {
    open_by_key_.erase(key);
    returned_.insert(key);
    if (r.result != 0 && r.result != 7 /* ncclInProgress */ && !d_.first_nccl_error) {
      d_.first_nccl_error =
          NcclError{r.result, r.what, r.call_kind == static_cast<uint8_t>(trace::NcclCallKind::kCommunicator),
                    as_ns(r.at_ns)};
    }
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

void NcclScan::finish_open_calls() {
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

void NcclScan::on_op(const trace::NcclOpRecord& r) {
  const int64_t enter = as_ns(r.host_enter_ns), exit = std::max(as_ns(r.host_exit_ns), enter);
  clock_.see(enter);
  clock_.see(exit);
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
  OpRef ref{ci, op, r.sequence, is_p2p(op), 0};
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
      if (comm.first_enters_ns.size() == comm.first_enters_ns.capacity()) {
        comm.first_enters_ns.reserve(
            std::min(std::max<size_t>(8, 2 * comm.first_enters_ns.size()), kFirstEnters));
      }
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
  if (r.external_correlation_id != 0) join_.add_op(r.external_correlation_id, ref, clock_.now_ns, matched());
}

void NcclScan::on_kernel(uint32_t correlation_id, KernelSpan span) {
  d_.nccl_kernels_seen = true;
  join_.add_kernel(correlation_id, span, clock_.now_ns, matched());
}

void NcclScan::on_link(uint32_t correlation_id, uint64_t external_id) {
  join_.add_link(correlation_id, external_id, clock_.now_ns, matched());
}

void NcclScan::add_sample(uint32_t& stride, std::vector<InstanceSample>& samples, uint64_t sequence,
                          int64_t enter_ns, int64_t exit_ns, uint8_t op, uint16_t fingerprint) {
  if (!sampled(sequence, stride) || sequence > InstanceSample::kMaxSequence) return;
  // Exactly the cap (and the one that halves the list), not a doubling vector's slack.
  if (samples.size() == samples.capacity()) {
    samples.reserve(
        std::min<size_t>(std::max<size_t>(16, 2 * samples.size()), size_t{options_.instances_per_comm} + 1));
  }
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

void NcclScan::on_matched(const OpRef& ref, const KernelSpan& span) {
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

void NcclScan::finish() {
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
  d_.p2p_ns = d_.nccl_kernels_seen ? kernel_p2p_ns_ : host_p2p_ns_;
  d_.ops_without_kernel = join_.ops_without_kernel();
}

}  // namespace pipescope::analysis::detail
