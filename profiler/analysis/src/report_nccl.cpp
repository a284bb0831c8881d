// NCCL per communicator and operation (nccl-tests bandwidth definitions), who everyone waited
// on in collectives (stragglers), and the hang view: how far each member of each communicator got.
#include <algorithm>
#include <unordered_map>

#include "parallel_for.h"
#include "report_context.h"
#include "sample_merge.h"

namespace pipescope::analysis {
namespace {

using trace::NcclOpType;

// nccl-tests (doc/PERFORMANCE.md): algbw = S / t with S the operation's size as nccl-tests counts
// it, busbw = algbw x a factor of the rank count. The profiler records this rank's buffer bytes
// (count x datatype), which for all-gather, reduce-scatter and all-to-all is S / n.
double size_factor(uint8_t op, int32_t n) {
  switch (static_cast<NcclOpType>(op)) {
    case NcclOpType::kAllGather:
    case NcclOpType::kReduceScatter:
    case NcclOpType::kAllToAll: return n;
    default: return 1;
  }
}

double bus_factor(uint8_t op, int32_t n) {
  const double ranks = n;
  switch (static_cast<NcclOpType>(op)) {
    case NcclOpType::kAllReduce: return 2 * (ranks - 1) / ranks;
    case NcclOpType::kAllGather:
    case NcclOpType::kReduceScatter:
    case NcclOpType::kAllToAll: return (ranks - 1) / ranks;
    default: return 1;
  }
}

// One communicator's rows: per operation, totals over its members and the member that arrived
// last at the sampled instances every member reached (ties: the lowest rank).
std::vector<NcclOpReport> nccl_reports_of(const ReportContext& ctx, const CommInfo& comm) {
  std::vector<NcclOpReport> out;
  if (comm.size < 2) return out;
  std::vector<const CommDigest*> digests;
  const std::vector<MemberSamples> lists = traced_member_samples(ctx.run, comm, &digests);
  if (digests.empty()) return out;

  // slowest[op][k]: how often lists[k]'s member arrived last.
  std::array<std::vector<uint64_t>, 11> slowest;
  std::vector<MemberSample> group;
  std::vector<size_t> at;
  merge_by_sequence(
      lists, comm.sample_stride, group, at, [&](uint64_t, std::span<const MemberSample> members) {
        int32_t arrived = 0;
        const MemberSample* first = nullptr;
        const MemberSample* last = nullptr;
        int64_t first_ns = 0, last_ns = 0;
        for (const MemberSample& s : members) {
          const int64_t arrive = ctx.kernel_mode ? s.sample->start_ns : s.sample->enter_ns;
          if (arrive < 0) continue;
          const int64_t at_ns = ctx.aligned(static_cast<size_t>(s.member), arrive);
          if (first == nullptr || at_ns < first_ns) {
            first = &s;
            first_ns = at_ns;
          }
          if (last == nullptr || at_ns >= last_ns) {  // the last of equal arrivals, as std::minmax_element
            last = &s;
            last_ns = at_ns;
          }
          ++arrived;
        }
        // A tie (every member within 0.2 ms) has no slowest member.
        if (arrived != comm.size || last_ns - first_ns <= 200'000) return;
        auto& counts = slowest[std::min<uint64_t>(last->sample->op, 10)];
        counts.resize(lists.size(), 0);
        ++counts[last->position];
      });

  for (uint8_t op = 1; op <= 10; ++op) {
    OpTotals sum;
    for (const CommDigest* c : digests) {
      const OpTotals& t = c->ops[op];
      sum.calls += t.calls;
      sum.bytes += t.bytes;
      sum.time_ns += t.time_ns;
      sum.kernel_calls += t.kernel_calls;
      sum.kernel_time_ns += t.kernel_time_ns;
    }
    if (sum.calls == 0) continue;
    const auto members = static_cast<int64_t>(digests.size());
    NcclOpReport r;
    r.comm_id = comm.comm_id;
    r.role = comm.role;
    r.op = nccl_op_name(op);
    r.comm_size = comm.size;
    r.calls = sum.calls / static_cast<uint64_t>(members);
    r.bytes = static_cast<uint64_t>(static_cast<double>(sum.bytes / static_cast<uint64_t>(members)) *
                                    size_factor(op, comm.size));
    r.time_ns = (sum.kernel_calls > 0 ? sum.kernel_time_ns : sum.time_ns) / members;
    if (r.time_ns > 0) {
      r.algbw_bytes_per_s = static_cast<double>(r.bytes) / (static_cast<double>(r.time_ns) * 1e-9);
      r.busbw_bytes_per_s = r.algbw_bytes_per_s * bus_factor(op, comm.size);
    }
    for (size_t k = 0; k < slowest[op].size(); ++k) {
      const uint64_t count = slowest[op][k];
      const int32_t rank = ctx.run.global_rank[static_cast<size_t>(lists[k].member)];
      if (count > r.slowest_rank_count ||
          (count > 0 && count == r.slowest_rank_count && rank < r.slowest_rank)) {
        r.slowest_rank_count = count;
        r.slowest_rank = rank;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

const char* nccl_op_name(uint8_t op) { return trace::nccl_op_name(op); }

void add_nccl_reports(const ReportContext& ctx, RunReport& report) {
  std::vector<std::vector<NcclOpReport>> by_comm(ctx.comms.size());
  parallel_for(ctx.comms.size(), ctx.options.threads,
               [&](size_t c) { by_comm[c] = nccl_reports_of(ctx, ctx.comms[c]); });
  for (auto& rows : by_comm) report.nccl.insert(report.nccl.end(), rows.begin(), rows.end());
  std::sort(report.nccl.begin(), report.nccl.end(),
            [](const NcclOpReport& a, const NcclOpReport& b) { return a.time_ns > b.time_ns; });
}

namespace {

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
  std::vector<int32_t> roots;
  size_t blocked = 0;
  for (const auto& [start, first] : waits_on) {
    std::vector<int32_t> stack = first, seen = {start};
    bool reaches_root = false;
    while (!stack.empty()) {
      const int32_t r = stack.back();
      stack.pop_back();
      if (std::find(seen.begin(), seen.end(), r) != seen.end()) continue;
      seen.push_back(r);
      const auto next = waits_on.find(r);
      if (next == waits_on.end()) {
        reaches_root = true;
        if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
      } else {
        stack.insert(stack.end(), next->second.begin(), next->second.end());
      }
    }
    blocked += reaches_root;
  }
  std::sort(roots.begin(), roots.end());
  hang.root_ranks = std::move(roots);
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
  std::sort(hang.communicators.begin(), hang.communicators.end(),
            [](const CommHang& a, const CommHang& b) { return a.waited_ns > b.waited_ns; });
  add_p2p_hangs(ctx, report);
  find_root_ranks(hang);
  hang.suspected = !hang.communicators.empty() || !hang.p2p.empty() || !hang.ended_early.empty();
}

}  // namespace pipescope::analysis
