// The hang view: how far each member of each communicator got (operations, and communicators
// being created), who waits on whom, the ranks at the root and where each of them is stuck, and
// members that disagree about what they run (desyncs, p2p size mismatches).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "report_context.h"
#include "sample_merge.h"

namespace pipescope::analysis {

namespace {

using trace::NcclCallKind;
using trace::NcclCommEvent;

const char* creation_call_name(uint8_t event) {
  switch (static_cast<NcclCommEvent>(event)) {
    case NcclCommEvent::kInit: return "ncclCommInitRank";
    case NcclCommEvent::kSplit: return "ncclCommSplit";
    case NcclCommEvent::kShrink: return "ncclCommShrink";
    case NcclCommEvent::kFinalize: return "ncclCommFinalize";
    case NcclCommEvent::kDestroy: return "ncclCommDestroy";
    case NcclCommEvent::kAbort: return "ncclCommAbort";
    case NcclCommEvent::kRevoke: return "ncclCommRevoke";
  }
  return "an NCCL communicator call";
}

bool creates(const OpenCall& call) {
  if (call.kind != NcclCallKind::kCommunicator) return false;
  const auto event = static_cast<NcclCommEvent>(call.what);
  return event == NcclCommEvent::kInit || event == NcclCommEvent::kSplit || event == NcclCommEvent::kShrink;
}

// Communicators whose creation some members entered and none finished: the members that never
// entered it are the ones waited on. Who the members are: for a split or shrink, the parent's;
// for an init, ranks 0..size-1 of the new communicator, which are the job's ranks when every
// member that entered has its own global rank there (a world communicator), else unknown (-1).
void add_creation_hangs(const ReportContext& ctx, RunReport& report) {
  struct Entry {
    size_t member;
    const OpenCall* call;
  };
  std::map<std::tuple<uint8_t, uint64_t, uint64_t>, std::vector<Entry>> creations;
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i)
    for (const OpenCall& call : ctx.run.ranks[i].open_calls) {
      if (!creates(call)) continue;
      const bool init = static_cast<NcclCommEvent>(call.what) == NcclCommEvent::kInit;
      creations[{call.what, init ? call.comm_id : call.parent_comm_id, init ? 0 : call.sequence}].push_back(
          Entry{i, &call});
    }
  for (const auto& [key, entries] : creations) {
    const auto [event, id, index] = key;
    const bool init = static_cast<NcclCommEvent>(event) == NcclCommEvent::kInit;
    // Finished for some member: finished for all (creation is collective).
    const bool finished = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) {
      return e.call->comm_id != 0 && ctx.comm_by_id.count(e.call->comm_id) != 0;
    });
    if (finished) continue;
    CommHang h;
    h.comm_id = id;
    h.creation = true;
    h.next_op = creation_call_name(event);
    constexpr int32_t kEntered = INT32_MIN;  // a member that entered the creation
    std::vector<int32_t> members;            // global ranks, -1 unknown, or kEntered
    if (init) {
      int32_t size = 0;
      bool world_numbering = true;
      for (const Entry& e : entries) {
        size = std::max(size, e.call->size);
        world_numbering = world_numbering && e.call->rank == ctx.run.global_rank[e.member];
      }
      for (int32_t r = 0; r < size; ++r) members.push_back(world_numbering ? r : -1);
      h.role = size == ctx.run.world_size ? "world" : "new";
      for (const Entry& e : entries)
        if (e.call->rank >= 0 && e.call->rank < size) members[static_cast<size_t>(e.call->rank)] = kEntered;
    } else if (const auto parent = ctx.comm_by_id.find(id); parent != ctx.comm_by_id.end()) {
      const CommInfo& comm = ctx.comms[parent->second];
      h.role = comm.role;
      members = comm.ranks;
      for (const Entry& e : entries)
        std::replace(members.begin(), members.end(), ctx.run.global_rank[e.member], kEntered);
    } else {
      h.role = "other";
    }
    for (const Entry& e : entries) {
      h.entered.push_back(ctx.run.global_rank[e.member]);
      const int64_t since = ctx.aligned(e.member, e.call->enter_ns);
      h.waited_ns = std::max(h.waited_ns, report.ranks[e.member].last_event_ns - since);
    }
    for (int32_t m : members) {
      if (m == kEntered) continue;
      h.missing.push_back(m);
      if (m < 0 || ctx.index_of_rank.count(m) == 0 ||
          std::find(report.hang.no_trace.begin(), report.hang.no_trace.end(), m) !=
              report.hang.no_trace.end())
        h.untraced.push_back(m);
    }
    std::sort(h.entered.begin(), h.entered.end());
    std::sort(h.missing.begin(), h.missing.end());
    if (!h.entered.empty() && !h.missing.empty()) report.hang.communicators.push_back(std::move(h));
  }
}

std::string op_call_text(const ReportContext& ctx, const OpenCall& call) {
  if (call.kind == NcclCallKind::kCommunicator) return creation_call_name(call.what);
  std::string text = nccl_op_name(call.what);
  if (call.sequence != trace::kNcclUnknownSequence) text += " #" + std::to_string(call.sequence);
  if (const auto it = ctx.comm_by_id.find(call.comm_id); it != ctx.comm_by_id.end())
    text += " of a " + ctx.comms[it->second].role + " communicator";
  return text;
}

// Where a root rank is: without a trace; inside an NCCL call that never returned (the latest
// one); or in its own code since its last NCCL call returned.
void describe_root(const ReportContext& ctx, const RunReport& report, HangRoot& root) {
  const auto it = ctx.index_of_rank.find(root.rank);
  const bool no_trace = std::find(report.hang.no_trace.begin(), report.hang.no_trace.end(), root.rank) !=
                        report.hang.no_trace.end();
  if (it == ctx.index_of_rank.end() || no_trace) {
    root.where = "no trace";
    return;
  }
  const size_t i = it->second;
  const RankDigest& d = ctx.run.ranks[i];
  // It is no more: how it ended (a termination signal ends it where it was, said below).
  if (is_fatal_signal(d.ending_signal) || d.exit_status) {
    const bool crashed = is_fatal_signal(d.ending_signal);
    root.where = crashed ? "signal" : "exited";
    root.code = crashed ? d.ending_signal : *d.exit_status;
    root.since_ns = ctx.aligned(i, crashed ? d.ending_signal_at_ns : d.exit_at_ns);
    return;
  }
  if (!d.open_calls.empty()) {
    const OpenCall& call = d.open_calls.back();
    root.where = "in call";
    root.call = op_call_text(ctx, call);
    root.since_ns = ctx.aligned(i, call.enter_ns);
    return;
  }
  root.where = "host code";
  if (d.last_nccl_return_ns != INT64_MIN) {
    root.call = nccl_op_name(d.last_nccl_return_op);
    root.since_ns = ctx.aligned(i, d.last_nccl_return_ns);
  }
}

// One sequence number's view on each member: the fingerprint of what it ran (samples of
// completed calls, and calls still in flight).
struct SeenAt {
  int32_t rank;
  uint8_t op;
  uint16_t fingerprint;
};

// "rank 4 all_reduce, rank 6 all_gather"; when they ran the same operation, what differs.
std::string desync_text(const std::vector<SeenAt>& seen) {
  std::string text;
  for (const SeenAt& s : seen) {
    text += text.empty() ? "" : ", ";
    text += "rank " + std::to_string(s.rank) + " " + nccl_op_name(s.op);
  }
  const bool same_op =
      std::all_of(seen.begin(), seen.end(), [&](const SeenAt& s) { return s.op == seen.front().op; });
  return text + (same_op ? " (the same operation on another size, type or root)" : "");
}

// A PyTorch profiler trace numbers a communicator's calls from its own window's start, not from
// the communicator's: members' numbers need not match, and no desync can be told.
bool numbers_match_across_ranks(const RankDigest& d) {
  return !(d.process && d.process->launcher == "kineto");
}

// Members of a communicator that ran different things at the same sequence number: another
// operation, or the same one on another size, type or root. The first such number per
// communicator (later ones follow from it).
void add_desyncs(const ReportContext& ctx, RunReport& report) {
  constexpr size_t kMaxDesyncs = 16;
  std::vector<MemberSample> group;
  std::vector<size_t> at;
  for (const CommInfo& comm : ctx.comms) {
    if (comm.size < 2 || report.hang.desyncs.size() >= kMaxDesyncs) continue;
    if (std::any_of(comm.members.begin(), comm.members.end(), [&](int32_t m) {
          return m >= 0 && !numbers_match_across_ranks(ctx.run.ranks[static_cast<size_t>(m)]);
        }))
      continue;
    const std::vector<MemberSamples> lists = traced_member_samples(ctx.run, comm, nullptr);
    if (lists.size() < 2) continue;
    std::optional<Desync> found;
    merge_by_sequence(
        lists, comm.sample_stride, group, at, [&](uint64_t sequence, std::span<const MemberSample> members) {
          if (found || members.size() < 2) return;
          const bool agree = std::all_of(members.begin(), members.end(), [&](const MemberSample& m) {
            return m.sample->fingerprint == members.front().sample->fingerprint;
          });
          if (agree) return;
          Desync d;
          d.comm_id = comm.comm_id;
          d.role = comm.role;
          d.sequence = sequence;
          std::vector<SeenAt> seen;
          for (const MemberSample& m : members) {
            seen.push_back(SeenAt{ctx.run.global_rank[static_cast<size_t>(m.member)],
                                  static_cast<uint8_t>(m.sample->op),
                                  static_cast<uint16_t>(m.sample->fingerprint)});
            d.ranks.push_back(seen.back().rank);
          }
          d.what = desync_text(seen);
          found = std::move(d);
        });
    // Members in flight at the same number on different operations: NCCL waits for ever there.
    if (!found) {
      std::map<uint64_t, std::vector<SeenAt>> in_flight;
      for (int32_t m : comm.members) {
        if (m < 0) continue;
        for (const OpenCall& call : ctx.run.ranks[static_cast<size_t>(m)].open_calls)
          if (call.kind == NcclCallKind::kOperation && call.comm_id == comm.comm_id && !is_p2p(call.what))
            in_flight[call.sequence].push_back(
                SeenAt{ctx.run.global_rank[static_cast<size_t>(m)], call.what,
                       nccl_fingerprint(call.bytes, call.what, call.datatype, call.peer, false)});
      }
      for (const auto& entry : in_flight) {
        const uint64_t sequence = entry.first;
        const std::vector<SeenAt>& seen = entry.second;
        if (std::all_of(seen.begin(), seen.end(),
                        [&](const SeenAt& s) { return s.fingerprint == seen.front().fingerprint; }))
          continue;
        Desync d;
        d.comm_id = comm.comm_id;
        d.role = comm.role;
        d.sequence = sequence;
        for (const SeenAt& s : seen) d.ranks.push_back(s.rank);
        d.what = desync_text(seen);
        found = std::move(d);
        break;
      }
    }
    if (found) report.hang.desyncs.push_back(std::move(*found));
  }
}

// Sends and receives of one transfer whose sizes differ: NCCL needs them equal, and a real job
// hangs or corrupts data there. The first per (communicator, sender, receiver).
void add_p2p_mismatches(const ReportContext& ctx, RunReport& report) {
  constexpr size_t kMaxMismatches = 16;
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    const RankDigest& d = ctx.run.ranks[i];
    if (!numbers_match_across_ranks(d)) continue;
    for (const P2pDigest& send : d.p2p) {
      if (!send.send || report.hang.p2p_mismatches.size() >= kMaxMismatches) continue;
      const auto it = ctx.comm_by_id.find(send.comm_id);
      const CommDigest* mine = digest_of(d, send.comm_id);
      if (it == ctx.comm_by_id.end() || mine == nullptr) continue;
      const CommInfo& comm = ctx.comms[it->second];
      if (send.peer < 0 || send.peer >= comm.size || comm.members[static_cast<size_t>(send.peer)] < 0)
        continue;
      const auto peer = static_cast<size_t>(comm.members[static_cast<size_t>(send.peer)]);
      const P2pDigest* recv = nullptr;
      for (const P2pDigest& p : ctx.run.ranks[peer].p2p)
        if (!p.send && p.comm_id == send.comm_id && p.peer == mine->nccl_rank) recv = &p;
      if (recv == nullptr) continue;
      const uint32_t stride = std::max(send.sample_stride, recv->sample_stride);
      size_t a = 0, b = 0;
      while (a < send.samples.size() && b < recv->samples.size()) {
        const InstanceSample& s = send.samples[a];
        const InstanceSample& r = recv->samples[b];
        if (s.sequence < r.sequence || !sampled(s.sequence, stride)) {
          ++a;
        } else if (r.sequence < s.sequence || !sampled(r.sequence, stride)) {
          ++b;
        } else if (s.fingerprint != r.fingerprint) {
          report.hang.p2p_mismatches.push_back(
              P2pMismatch{ctx.run.global_rank[i], ctx.run.global_rank[peer], comm.role, s.sequence});
          break;
        } else {
          ++a;
          ++b;
        }
      }
    }
  }
}

// A rank whose latest NCCL operation is a send or receive that never completed waits on its
// peer: a blocking call that failed says so, a kernel that never ended too when the trace was
// not closed. So does a rank that others wait for in a collective it never entered, when a
// grouped send or receive was the last thing it did (a group reports its failure at
// ncclGroupEnd, which no record carries).
void add_p2p_hangs(const ReportContext& ctx, RunReport& report) {
  auto awaited = [&](int32_t rank) {
    for (const CommHang& h : report.hang.communicators)
      if (std::find(h.missing.begin(), h.missing.end(), rank) != h.missing.end()) return true;
    return false;
  };
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    const RankDigest& d = ctx.run.ranks[i];
    const bool kernels = ctx.kernel_mode && d.nccl_kernels_seen;
    int64_t latest_collective = INT64_MIN;
    for (const CommDigest& c : d.comms)
      if (c.last_entered > 0) latest_collective = std::max(latest_collective, c.last_entered_at_ns);
    const P2pDigest* latest = nullptr;
    for (const P2pDigest& p : d.p2p)
      if (p.last_entered > 0 && (latest == nullptr || p.last_entered_at_ns > latest->last_entered_at_ns))
        latest = &p;
    if (latest == nullptr || latest->last_entered_at_ns < latest_collective) continue;
    const uint64_t done = kernels ? latest->last_completed_kernel : latest->last_completed_host;
    const bool stuck = latest->last_entered > done && !(kernels && d.end);
    if (!stuck && !(latest->last_entered_in_group && awaited(ctx.run.global_rank[i]))) continue;
    P2pHang h;
    h.rank = ctx.run.global_rank[i];
    h.op = latest->send ? "send" : "recv";
    if (const auto it = ctx.comm_by_id.find(latest->comm_id); it != ctx.comm_by_id.end()) {
      const CommInfo& comm = ctx.comms[it->second];
      if (latest->peer >= 0 && latest->peer < comm.size) h.peer = comm.ranks[latest->peer];
    }
    h.waited_ns = report.ranks[i].last_event_ns - ctx.aligned(i, latest->last_entered_at_ns);
    report.hang.p2p.push_back(h);
  }
}

// Waiting ranks point at the ranks they wait for; following the arrows ends at ranks whose own
// operations are not stuck: the root cause (a rank blocked in one communicator is why the others
// wait for it in the next).
void find_root_ranks(HangReport& hang) {
  std::unordered_map<int32_t, std::vector<int32_t>> waits_on;
  for (const CommHang& h : hang.communicators)
    for (int32_t e : h.entered)
      for (int32_t m : h.missing)
        if (m >= 0) waits_on[e].push_back(m);
  for (const P2pHang& h : hang.p2p)
    if (h.peer >= 0) waits_on[h.rank].push_back(h.peer);
  std::map<int32_t, size_t> waiting;  // root -> ranks that reach it
  size_t blocked = 0;
  std::vector<int32_t> stack, seen;
  for (const auto& [start, first] : waits_on) {
    stack = first;
    seen.assign(1, start);
    bool reaches_root = false;
    while (!stack.empty()) {
      const int32_t r = stack.back();
      stack.pop_back();
      if (std::find(seen.begin(), seen.end(), r) != seen.end()) continue;
      seen.push_back(r);
      const auto next = waits_on.find(r);
      if (next == waits_on.end()) {
        reaches_root = true;
        ++waiting[r];
      } else {
        stack.insert(stack.end(), next->second.begin(), next->second.end());
      }
    }
    blocked += reaches_root;
  }
  hang.root_ranks.clear();
  for (const auto& [root, count] : waiting) {
    hang.root_ranks.push_back(root);
    HangRoot r;
    r.rank = root;
    r.waiting = count;
    hang.roots.push_back(r);
  }
  hang.blocked = blocked;
}

}  // namespace

void add_hang_report(const ReportContext& ctx, RunReport& report) {
  HangReport& hang = report.hang;
  const size_t n = ctx.run.ranks.size();
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t i = 0; i < n; ++i) {
    if (ctx.run.ranks[i].first_ns == INT64_MAX) continue;  // no timed record: listed as no trace
    first = std::min(first, report.ranks[i].first_event_ns);
    last = std::max(last, report.ranks[i].last_event_ns);
  }
  hang.no_trace = ctx.run.missing_ranks;
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.run.ranks[i].end) hang.not_closed.push_back(ctx.run.global_rank[i]);
    if (ctx.run.ranks[i].first_ns == INT64_MAX) {
      hang.no_trace.push_back(ctx.run.global_rank[i]);
      continue;
    }
    const int64_t slack = std::max<int64_t>(1'000'000'000, (last - first) / 20);
    if (n > 1 && report.ranks[i].last_event_ns < last - slack)
      hang.ended_early.push_back(ctx.run.global_rank[i]);
  }
  std::sort(hang.no_trace.begin(), hang.no_trace.end());
  for (const CommInfo& comm : ctx.comms) {
    if (comm.size < 2) continue;
    struct Progress {
      int32_t member;
      const CommDigest* digest;
      uint64_t completed;
    };
    // Traced members only: a member without a trace is seen through the others. Every member
    // completed what all the traced ones completed (a collective ends for all or none), so when
    // every traced member entered the next one, the untraced are the ones it waits for.
    std::vector<Progress> progress;
    for (int32_t m : comm.members) {
      if (m < 0) continue;
      const RankDigest& d = ctx.run.ranks[m];
      if (const CommDigest* c = digest_of(d, comm.comm_id)) {
        const uint64_t done =
            ctx.kernel_mode && d.nccl_kernels_seen ? c->last_completed_kernel : c->last_completed_host;
        progress.push_back(Progress{m, c, done});
      }
    }
    if (progress.empty()) continue;
    uint64_t done_by_all = UINT64_MAX;
    for (const Progress& p : progress) done_by_all = std::min(done_by_all, p.completed);
    CommHang h;
    h.comm_id = comm.comm_id;
    h.role = comm.role;
    h.last_completed_by_all = done_by_all;
    for (const Progress& p : progress) {
      const int32_t rank = ctx.run.global_rank[p.member];
      if (p.digest->last_entered > done_by_all) {
        h.entered.push_back(rank);
        if (p.digest->last_entered == done_by_all + 1) h.next_op = nccl_op_name(p.digest->last_entered_op);
        const int64_t since = ctx.aligned(p.member, p.digest->last_entered_at_ns);
        h.waited_ns = std::max(h.waited_ns, report.ranks[p.member].last_event_ns - since);
      } else {
        h.missing.push_back(rank);
      }
    }
    for (size_t k = 0; k < comm.members.size(); ++k) {
      if (comm.traced(k)) continue;
      h.missing.push_back(comm.ranks[k]);
      h.untraced.push_back(comm.ranks[k]);
    }
    if (h.entered.empty() || h.missing.empty()) continue;
    std::sort(h.missing.begin(), h.missing.end());
    hang.communicators.push_back(std::move(h));
  }
  add_creation_hangs(ctx, report);
  std::sort(hang.communicators.begin(), hang.communicators.end(),
            [](const CommHang& a, const CommHang& b) { return a.waited_ns > b.waited_ns; });
  add_p2p_hangs(ctx, report);
  find_root_ranks(hang);
  for (HangRoot& root : hang.roots) describe_root(ctx, report, root);
  add_desyncs(ctx, report);
  add_p2p_mismatches(ctx, report);
  hang.suspected = !hang.communicators.empty() || !hang.p2p.empty() || !hang.ended_early.empty();
}

}  // namespace pipescope::analysis
